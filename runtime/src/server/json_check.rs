//! The JSON check as the HTTP front's layer before the owned path and rmcp: a JSON POST
//! body is read within the server's read timeout and checked ([`super::wire`]), what the
//! message is decides two caps, and the owned path ([`super::owned`]) answers what it
//! recognizes from the bytes read here.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;

use super::wire::check;

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// What the HTTP side of the check holds: what one request may take, and the requests
/// toolgate answers itself.
pub(crate) struct HttpFront {
    pub(crate) limits: super::http::RequestLimits,
    pub(crate) owned: super::owned::OwnedPath,
}

/// The HTTP side, innermost around rmcp's service: a JSON POST body is read within the
/// server's read timeout and checked (and answered 400 with its JSON-RPC error when
/// refused) before rmcp parses it; a `subscriptions/listen` request takes a place among
/// the live streams, held until its stream ends (503 past the cap); the DELETE that ends
/// a session answers 200 (rmcp says 202, which clients take for a failure).
///
/// A `tools/call` or `tools/list` of MCP 2026-07-28 that the owned path recognizes is
/// answered there ([`super::owned`]), from the bytes read here, instead of by rmcp.
pub(crate) async fn check_http(State(front): State<Arc<HttpFront>>, request: Request, next: Next) -> Response {
    let limits = &front.limits;
    if request.method() == http::Method::DELETE {
        let mut response = next.run(request).await;
        if response.status() == http::StatusCode::ACCEPTED {
            *response.status_mut() = http::StatusCode::OK;
        }
        return response;
    }
    if request.method() != http::Method::POST || !is_json(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match limits.read_body(body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let message = match check(&bytes) {
        Ok(message) => message,
        Err(refusal) => {
            // rmcp refuses a disallowed Host or Origin (403, DNS rebinding) before it reads a
            // body: that comes first for a malformed one too. Asked with no body, rmcp answers
            // 403 or refuses the empty body (which reaches no handler); only its 403 is kept.
            let mut parts = parts;
            parts.headers.remove(http::header::CONTENT_LENGTH);
            let probe = next.run(Request::from_parts(parts, Body::empty())).await;
            if probe.status() == http::StatusCode::FORBIDDEN {
                return probe;
            }
            return refusal.answer(http::StatusCode::BAD_REQUEST);
        }
    };
    if message.initializes
        && let Some(refused) = limits.refuse_new_session(&parts, &message.id)
    {
        return refused;
    }
    if !message.listens
        && !message.initializes
        && let Some(response) = front.owned.answer(&parts, &bytes).await
    {
        return response;
    }
    let stream = if message.listens {
        match limits.streams.open(&parts) {
            Ok(place) => Some(place),
            Err(full) => return full.answer(message.id),
        }
    } else {
        None
    };
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    match stream {
        // The place is held by the reply's body: it is freed when the stream ends.
        Some(place) => response.map(|body| {
            Body::from_stream(body.into_data_stream().map(move |frame| {
                let _held = &place;
                frame
            }))
        }),
        None => response,
    }
}

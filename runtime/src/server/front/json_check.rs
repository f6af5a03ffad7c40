//! The front's fifth layer: a JSON POST body is read — no larger than the limit (413),
//! within the read timeout (408) — and checked ([`crate::server::wire`]: one well-formed
//! JSON-RPC message within the server's bounds), or refused 400 with its JSON-RPC error.
//! What passes goes on as the bytes read here, with what the check learned of the message
//! ([`Checked`]) for the layers after it: the owned path answers from those bytes, and
//! the rmcp layer caps what the message opens.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::super::wire::{Refusal, check};
use super::options::HttpOptions;

/// What one request's body may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    max_bytes: usize,
    read_timeout: Duration,
}

impl BodyLimits {
    pub(crate) fn new(options: &HttpOptions) -> Self {
        Self { max_bytes: options.max_request_body_bytes, read_timeout: options.request_read_timeout }
    }

    /// The whole body, if it is no larger than the limit (413) and arrives within the read
    /// timeout (408); each refusal a JSON-RPC error.
    async fn read(&self, body: Body) -> Result<Bytes, Response> {
        match tokio::time::timeout(self.read_timeout, axum::body::to_bytes(body, self.max_bytes)).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(_)) => Err(Refusal::too_large(self.max_bytes).answer(http::StatusCode::PAYLOAD_TOO_LARGE)),
            Err(_) => {
                tracing::debug!("refused a request: its body did not arrive within the read timeout");
                Err(Refusal::too_slow(self.read_timeout).answer(http::StatusCode::REQUEST_TIMEOUT))
            }
        }
    }
}

/// A checked message, in its request's extensions: the body's bytes (the body carries
/// them too) and what the layers after the check need to know of it.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub(crate) bytes: Bytes,
    /// The message's id (`null` for a notification or a response).
    pub(crate) id: serde_json::Value,
    /// A `subscriptions/listen` request: it opens a stream that stays open.
    pub(crate) listens: bool,
    /// An `initialize` request: it may open a session.
    pub(crate) initializes: bool,
}

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The layer. Anything but a JSON POST passes untouched (rmcp answers it: a GET stream,
/// a DELETE, a wrong Content-Type).
pub(crate) async fn check_json(State(limits): State<Arc<BodyLimits>>, request: Request, next: Next) -> Response {
    if request.method() != http::Method::POST || !is_json(&request) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match limits.read(body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let message = match check(&bytes) {
        Ok(message) => message,
        Err(refusal) => {
            // rmcp refuses a disallowed Host or Origin (403, DNS rebinding) before it reads a
            // body: that comes first for a malformed one too. Asked with no body, rmcp answers
            // 403 or refuses the empty body (which reaches no handler); only its 403 is kept.
            parts.headers.remove(http::header::CONTENT_LENGTH);
            let probe = next.run(Request::from_parts(parts, Body::empty())).await;
            if probe.status() == http::StatusCode::FORBIDDEN {
                return probe;
            }
            return refusal.answer(http::StatusCode::BAD_REQUEST);
        }
    };
    parts.extensions.insert(Checked {
        bytes: bytes.clone(),
        id: message.id,
        listens: message.listens,
        initializes: message.initializes,
    });
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

//! The front's fifth layer: a JSON POST body is read — no larger than the limit (413),
//! within the read timeout (408) — and checked ([`crate::server::wire`]: one well-formed
//! JSON-RPC message within the server's bounds), or refused 400 with its JSON-RPC error.
//! What passes goes on as the bytes read here, with what the check learned of the message
//! ([`Checked`]) for the layers after it: the owned path answers from those bytes, and
//! the rmcp layer caps what the message opens.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use std::convert::Infallible;
use std::pin::Pin;

use axum::extract::Request;
use axum::response::Response;

use super::super::wire::Refusal;
use crate::server::http_options::HttpOptions;

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

/// A request's answer, as the front's own layers box it.
pub(crate) type Answered = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// The layer. Anything but a JSON POST passes untouched, with no future boxed (rmcp
/// answers it: a GET stream, a DELETE, a wrong Content-Type). A plain tower layer, not an
/// `axum::middleware::from_fn` (whose `Next` is cloned and boxed per request).
#[derive(Debug, Clone)]
pub(crate) struct JsonCheckLayer(pub(crate) Arc<BodyLimits>);

impl<S> tower::Layer<S> for JsonCheckLayer {
    type Service = CheckJson<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CheckJson { limits: self.0.clone(), inner }
    }
}

/// [`JsonCheckLayer`]'s service.
#[derive(Debug, Clone)]
pub(crate) struct CheckJson<S> {
    limits: Arc<BodyLimits>,
    inner: S,
}

impl<S> tower::Service<Request> for CheckJson<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures_util::future::Either<S::Future, Answered>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() != http::Method::POST || !is_json(&request) {
            return futures_util::future::Either::Left(self.inner.call(request));
        }
        // The service made ready goes with the request; a clone stays for the next one.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        futures_util::future::Either::Right(Box::pin(check(self.limits.clone(), request, inner)))
    }
}

/// Reads and checks the body of `request`, then hands it to `inner` with what the check
/// learned, or answers the refusal.
async fn check<S>(limits: Arc<BodyLimits>, request: Request, mut inner: S) -> Result<Response, Infallible>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    let (mut parts, body) = request.into_parts();
    let bytes = match limits.read(body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return Ok(refusal),
    };
    let message = match super::super::wire::check(&bytes) {
        Ok(message) => message,
        Err(refusal) => {
            // rmcp refuses a disallowed Host or Origin (403, DNS rebinding) before it reads a
            // body: that comes first for a malformed one too. Asked with no body, rmcp answers
            // 403 or refuses the empty body (which reaches no handler); only its 403 is kept.
            parts.headers.remove(http::header::CONTENT_LENGTH);
            let probe = inner.call(Request::from_parts(parts, Body::empty())).await?;
            if probe.status() == http::StatusCode::FORBIDDEN {
                return Ok(probe);
            }
            return Ok(refusal.answer(http::StatusCode::BAD_REQUEST));
        }
    };
    parts.extensions.insert(Checked {
        bytes: bytes.clone(),
        id: message.id,
        listens: message.listens,
        initializes: message.initializes,
    });
    inner.call(Request::from_parts(parts, Body::from(bytes))).await
}

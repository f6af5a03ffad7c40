//! The front's last layer: rmcp's Streamable HTTP service, which answers everything the
//! owned path did not (sessions, `initialize`, streams, notifications, responses, and any
//! request the owned path does not recognize) — with what toolgate adds around it:
//! - an `initialize` outside a session while the server holds its maximum of sessions is
//!   answered 503 before rmcp (which would log each refusal as an error), and one the
//!   session manager refuses in a race for the last place gets 503 rather than rmcp's
//!   500 ([`session_cap`]);
//! - a `subscriptions/listen` request the owned path left to it takes a place among the
//!   live streams, held until its stream ends (503 past the caps,
//!   [`StreamCap`](super::streams::StreamCap), shared with the owned path);
//! - the DELETE that ends a session answers 200 (rmcp says 202, which clients take for a
//!   failure);
//! - on a stateful server, the session manager is toolgate's ([`sessions`]): each call's
//!   messages travel on its own response stream, and sessions are capped and owned.

mod session_cap;
mod sessions;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use futures_util::StreamExt;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::SessionManager;

pub(crate) use session_cap::SessionCap;
pub(crate) use sessions::CallStreamSessions;

use super::json_check::Checked;
use super::streams::StreamCap;
use crate::server::Connection;

/// rmcp's service with toolgate's caps around it, behind an `Arc`: a request clones a
/// reference count and calls [`StreamableHttpService::handle`]. (Mounted as a service,
/// rmcp's would be cloned per request — twice by axum's routing, once more by its own
/// `call` — each clone copying its configuration, the allowed hosts and origins: ~15k
/// instructions a request.)
pub(crate) struct Rmcp<M: SessionManager> {
    service: StreamableHttpService<Connection, M>,
    /// The sessions of a stateful server (`None`: sessionless).
    sessions: Option<Arc<CallStreamSessions>>,
    streams: Arc<StreamCap>,
}

impl<M: SessionManager> Rmcp<M> {
    pub(crate) fn new(
        service: StreamableHttpService<Connection, M>,
        sessions: Option<Arc<CallStreamSessions>>,
        streams: Arc<StreamCap>,
    ) -> Self {
        Self { service, sessions, streams }
    }

    /// The router that answers every request with this layer. Its future is boxed on its
    /// own: rmcp's holds a whole request, and the handler's future is moved (copied whole)
    /// at each of axum's wrappings; kept small, it costs nothing to move.
    pub(crate) fn into_router(self) -> axum::Router {
        let this = Arc::new(self);
        axum::Router::new().fallback(move |request: Request| {
            let this = this.clone();
            async move { Box::pin(this.answer(request)).await }
        })
    }

    /// The answer to `request`, from rmcp.
    async fn answer(&self, mut request: Request) -> Response {
        // The checked bytes are the body's now: not kept for the whole of a long call.
        let checked = request.extensions_mut().remove::<Checked>();
        let deletes = request.method() == http::Method::DELETE;
        let mut stream = None;
        if let Some(checked) = &checked {
            if checked.initializes
                && let Some(refused) = self.refuse_new_session(&request, &checked.id)
            {
                return refused;
            }
            if checked.listens {
                let (parts, body) = request.into_parts();
                match self.streams.open(&parts) {
                    Ok(place) => stream = Some(place),
                    Err(full) => return full.answer(checked.id.clone()),
                }
                request = Request::from_parts(parts, body);
            }
        }
        let handled = async { self.service.handle(request).await.map(Body::new) };
        let mut response = match &self.sessions {
            Some(sessions) => session_cap::answering_refusals(sessions.cap.max, handled).await,
            None => handled.await,
        };
        if deletes && response.status() == http::StatusCode::ACCEPTED {
            *response.status_mut() = http::StatusCode::OK;
        }
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

    /// The answer to an `initialize` outside a session while the server holds its maximum
    /// of sessions: 503, as the session manager would give (it stays the authority for a
    /// race to the last place), without rmcp's error log line per refusal.
    fn refuse_new_session(&self, request: &Request, id: &serde_json::Value) -> Option<Response> {
        let sessions = self.sessions.as_ref()?;
        if request.headers().contains_key("mcp-session-id") || !sessions.cap.is_full(&sessions.inner) {
            return None;
        }
        sessions.cap.refusals.refused("refused new sessions: the server holds its maximum");
        Some(session_cap::session_refusal(sessions.cap.max, id.clone()))
    }
}

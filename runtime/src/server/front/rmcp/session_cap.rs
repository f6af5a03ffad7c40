//! The cap on live sessions of a stateful server, and its answer: 503 with `Retry-After`
//! (rmcp would answer a refused `create_session` with a bare 500).

use std::cell::Cell;

use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};

use crate::server::front::limits::full;
use crate::server::refusal_log::RefusalLog;

/// The cap on live sessions. It is enforced where sessions are created, in toolgate's
/// session manager ([`super::sessions::CallStreamSessions`]), and counts every session
/// rmcp holds: whether a request opens one is rmcp's decision (an `initialize` naming the
/// sessionless 2026-07-28 revision still opens one), so no header a request carries can
/// get around it. [`answering_refusals`] gives a refusal its HTTP answer.
#[derive(Debug)]
pub(crate) struct SessionCap {
    pub(super) max: usize,
    /// Held from counting the live sessions until the new one is among them: two
    /// `initialize`s racing for the last place cannot both get it.
    creating: tokio::sync::Mutex<()>,
    pub(super) refusals: RefusalLog,
}

impl SessionCap {
    /// Whether `sessions` holds the maximum now (a glance, for refusing early: not a
    /// reservation).
    pub(super) fn is_full(&self, sessions: &LocalSessionManager) -> bool {
        sessions.sessions.try_read().is_ok_and(|live| live.len() >= self.max)
    }
}

/// Why toolgate's session manager did not do what rmcp asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// Creating a session would pass the cap.
    #[error("this server holds its maximum of {0} sessions")]
    Full(usize),
    /// rmcp's own session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

tokio::task_local! {
    /// Set while [`answering_refusals`] runs a request: whether the session
    /// manager refused to create a session for it. rmcp answers any error of
    /// `create_session` with a bare 500; this one becomes a 503. rmcp
    /// calls `create_session` inside the request's own future (no spawned task), so the
    /// manager sees the scope the middleware opened.
    static SESSION_REFUSED: Cell<bool>;
}

impl SessionCap {
    pub(crate) fn new(max: usize) -> Self {
        Self { max, creating: tokio::sync::Mutex::new(()), refusals: RefusalLog::default() }
    }

    /// Runs `create` if fewer than the cap of `sessions` live; otherwise creates nothing and
    /// refuses (the handler rmcp built for the session is dropped unused). Also for a
    /// session restored from a store: it is one more live session.
    pub(crate) async fn create<T>(
        &self,
        sessions: &LocalSessionManager,
        create: impl Future<Output = Result<T, LocalSessionManagerError>>,
    ) -> Result<T, SessionsError> {
        let _creating = self.creating.lock().await;
        if sessions.sessions.read().await.len() >= self.max {
            self.refusals.refused("refused new sessions: the server holds its maximum");
            // Outside a request (no scope) the refusal stands; only its status differs.
            let _ = SESSION_REFUSED.try_with(|refused| refused.set(true));
            return Err(SessionsError::Full(self.max));
        }
        Ok(create.await?)
    }
}

/// Runs `request` (rmcp answering it) and answers 503 with `Retry-After` instead if the
/// session manager refused it a session past the cap of `max`.
pub(super) async fn answering_refusals(max: usize, request: impl Future<Output = Response>) -> Response {
    let (response, refused) = SESSION_REFUSED
        .scope(Cell::new(false), async move {
            let response = request.await;
            (response, SESSION_REFUSED.with(Cell::get))
        })
        .await;
    if !refused {
        return response;
    }
    session_refusal(max, serde_json::Value::Null)
}

/// 503 with `Retry-After` for a session past the cap of `max`.
pub(super) fn session_refusal(max: usize, id: serde_json::Value) -> Response {
    full(format!("this server holds its maximum of {max} sessions; retry later, or close an idle session"), id)
}

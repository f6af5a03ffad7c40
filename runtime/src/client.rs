//! [`ClientLink`]: how the engine reaches the client of a call, whatever carries it.
//!
//! A handler's progress, log lines and questions, and a confirmation page offered by
//! URL-mode elicitation, all go through this one trait. The transport implements it:
//! `server/` wraps rmcp's peer for stdio and stateful HTTP sessions, and the owned path
//! has a link of its own that reaches no client (a sessionless MCP 2026-07-28 call asks in
//! rounds, and its messages ride its own response stream). So nothing below `server/`
//! names an rmcp service type, and the owned path builds no rmcp service to get one.

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitationAction, InputRequest, ServerNotification};
use serde_json::Value;

/// Why the client did not answer a question sent to it.
#[derive(Debug)]
pub(crate) enum RequestFailed {
    /// It refused, failed, or the connection ended (the transport's words, for the log).
    Refused(String),
    /// This link cannot carry that question.
    NotAskable,
}

/// How the engine reaches the client of a call.
#[async_trait]
pub(crate) trait ClientLink: std::fmt::Debug + Send + Sync + 'static {
    /// Sends a notification; a client that is gone is no failure of the call (the
    /// transport's words come back, for the log).
    async fn notify(&self, notification: ServerNotification) -> Result<(), String>;

    /// Sends the client a request (MCP 2025-11-25: elicitation, sampling, roots) and waits
    /// for its answer, as JSON.
    async fn request(&self, request: &InputRequest) -> Result<Value, RequestFailed>;

    /// Whether the client said it takes URL-mode elicitation.
    fn takes_url_elicitation(&self) -> bool;

    /// Offers the person the page at `url` (URL-mode elicitation, under `id`), and waits
    /// at most `timeout` for them to accept or decline.
    async fn elicit_url(
        &self,
        message: String,
        url: url::Url,
        id: String,
        timeout: Duration,
    ) -> Result<ElicitationAction, String>;

    /// The transport's own handle, for `server/`'s extension that gives a handler rmcp's
    /// peer where there is one.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A link that reaches no client: notifications go nowhere, and nothing can be asked.
/// A sessionless MCP 2026-07-28 call has this one (its questions end a round instead, and
/// its messages ride its own response stream).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoClient;

#[async_trait]
impl ClientLink for NoClient {
    async fn notify(&self, _notification: ServerNotification) -> Result<(), String> {
        Ok(())
    }

    async fn request(&self, _request: &InputRequest) -> Result<Value, RequestFailed> {
        Err(RequestFailed::NotAskable)
    }

    fn takes_url_elicitation(&self) -> bool {
        false
    }

    async fn elicit_url(
        &self,
        _message: String,
        _url: url::Url,
        _id: String,
        _timeout: Duration,
    ) -> Result<ElicitationAction, String> {
        Err("no client can be reached from this call".into())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

//! The client side of one call, as a handler reaches it through [`super::Ctx`]: progress
//! against the caller's token, log messages at the level the client asked for,
//! cancellation, and the link to the client for what it is asked.

// Logging is deprecated by SEP-2577 in rmcp 3.11 but still part of the protocol revisions
// toolgate serves; it stays behind toolgate's own `LogLevel`, so users never name the
// deprecated type.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ServerJsonRpcMessage, ServerNotification,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::client::ClientLink;
use crate::input::Inputs;

/// How severe a message to the client is (MCP's syslog levels), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Something worth knowing happened.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Someone must act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    fn from_mcp(level: LoggingLevel) -> Self {
        match level {
            LoggingLevel::Debug => Self::Debug,
            LoggingLevel::Info => Self::Info,
            LoggingLevel::Notice => Self::Notice,
            LoggingLevel::Warning => Self::Warning,
            LoggingLevel::Error => Self::Error,
            LoggingLevel::Critical => Self::Critical,
            LoggingLevel::Alert => Self::Alert,
            LoggingLevel::Emergency => Self::Emergency,
        }
    }

    fn to_mcp(self) -> LoggingLevel {
        match self {
            Self::Debug => LoggingLevel::Debug,
            Self::Info => LoggingLevel::Info,
            Self::Notice => LoggingLevel::Notice,
            Self::Warning => LoggingLevel::Warning,
            Self::Error => LoggingLevel::Error,
            Self::Critical => LoggingLevel::Critical,
            Self::Alert => LoggingLevel::Alert,
            Self::Emergency => LoggingLevel::Emergency,
        }
    }
}

/// The lowest level a connection's client wants (`logging/setLevel`); `Info` until it
/// says otherwise. `None`: no messages at all.
#[derive(Debug, Clone)]
pub(crate) struct LogThreshold(Arc<Mutex<Option<LogLevel>>>);

impl Default for LogThreshold {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Some(LogLevel::Info))))
    }
}

impl LogThreshold {
    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(LogLevel::from_mcp(level));
    }

    /// What one MCP 2026-07-28 request asked for in its `_meta` (nothing: no messages).
    fn of_request(level: Option<LoggingLevel>) -> Self {
        Self(Arc::new(Mutex::new(level.map(LogLevel::from_mcp))))
    }

    fn admits(&self, level: LogLevel) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some_and(|lowest| level >= lowest)
    }
}

/// What one request says of its client: the link to reach it through, its progress token,
/// the log level it asked for in `_meta` (MCP 2026-07-28), and its cancellation.
pub(crate) struct RequestSide {
    pub(crate) link: Arc<dyn ClientLink>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) cancel: CancellationToken,
}

/// What a call knows of its client.
#[derive(Debug, Clone)]
pub(crate) struct CallClient {
    link: Arc<dyn ClientLink>,
    progress_token: Option<ProgressToken>,
    cancel: CancellationToken,
    threshold: LogThreshold,
    /// The call's own response stream, while it is open (stateful HTTP).
    stream: Option<UnboundedSender<ServerJsonRpcMessage>>,
    /// How the call asks the client questions.
    inputs: Arc<Inputs>,
    /// Told when the handler first waits (a call that runs as a task is announced then).
    first_wait: Option<FirstWait>,
}

/// What a call that runs as a task does when its handler first waits.
#[derive(Clone)]
pub(crate) struct FirstWait(pub(crate) Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for FirstWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FirstWait")
    }
}

impl CallClient {
    /// The client of the call `request` makes. `stream`: where messages the call causes
    /// go ahead of its response, if the transport gives the call a stream of its own; else
    /// they go through the link. `threshold`: the connection's log level, for a request of
    /// a revision that sets it with `logging/setLevel` (a 2026-07-28 request says its own
    /// in `_meta`).
    pub(crate) fn of_request(
        request: RequestSide,
        threshold: LogThreshold,
        stream: Option<UnboundedSender<ServerJsonRpcMessage>>,
        inputs: Arc<Inputs>,
    ) -> Self {
        let threshold = if inputs.in_rounds() { LogThreshold::of_request(request.log_level) } else { threshold };
        Self {
            link: request.link,
            progress_token: request.progress_token,
            cancel: request.cancel,
            threshold,
            stream,
            inputs,
            first_wait: None,
        }
    }

    /// The same client for a call that runs as a task, after its request ended: no
    /// response stream or progress token of the request's, and cancelled by `cancel`
    /// (`tasks/cancel`) rather than by the request.
    /// `first_wait` runs when the handler first waits.
    pub(crate) fn for_task(&self, cancel: CancellationToken, inputs: Arc<Inputs>, first_wait: FirstWait) -> Self {
        Self { progress_token: None, cancel, stream: None, inputs, first_wait: Some(first_wait), ..self.clone() }
    }

    /// The request's own inputs (its rounds' answers, at 2026-07-28).
    pub(crate) fn inputs_shared(&self) -> Arc<Inputs> {
        self.inputs.clone()
    }

    /// What runs when the handler first waits, for a call that runs as a task.
    pub(crate) fn first_wait(&self) -> Option<&FirstWait> {
        self.first_wait.as_ref()
    }

    pub(crate) fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// Sends a notification the call causes: on the call's own stream while it is open,
    /// else through the link (stdio, sessionless, or after the call).
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        let notification = match &self.stream {
            Some(stream) => match stream.send(ServerJsonRpcMessage::notification(notification)) {
                Ok(()) => return,
                Err(closed) => match closed.0 {
                    ServerJsonRpcMessage::Notification(sent) => sent.notification,
                    _ => return,
                },
            },
            None => notification,
        };
        if let Err(error) = self.link.notify(notification).await {
            tracing::debug!(%error, "cannot send a notification");
        }
    }

    /// How the client is reached.
    pub(crate) fn link(&self) -> &dyn ClientLink {
        &*self.link
    }

    /// The same, to hold beside the call.
    pub(crate) fn link_shared(&self) -> Arc<dyn ClientLink> {
        self.link.clone()
    }

    pub(crate) fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = self.progress_token.clone() else { return };
        let mut param = ProgressNotificationParam::new(token, progress);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(message) = message {
            param = param.with_message(message);
        }
        // Ahead of the response on the call's own stream where it has one, as any message
        // it causes.
        let progress = rmcp::model::ProgressNotification::new(param);
        self.notify(ServerNotification::ProgressNotification(progress)).await
    }

    pub(crate) async fn log(&self, level: LogLevel, logger: &str, message: String) {
        if !self.threshold.admits(level) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level.to_mcp(), message.into()).with_logger(logger);
        self.notify(ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(param))).await;
    }
}

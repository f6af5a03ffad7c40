//! [`ServeError`]: why a server stopped with an error.

use crate::registry::StartupError;

/// Why a server stopped with an error.
#[derive(thiserror::Error)]
pub enum ServeError {
    /// The registry is invalid.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The command line is wrong: what is wrong, then the usage line and where to read more
    /// (`--help`).
    #[error("{0}")]
    Usage(String),
    /// The store named on the command line cannot be used.
    #[error("{0}")]
    Store(String),
    /// Binding or serving failed (or, for the commands that print, writing to stdout).
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP connection could not start (stdio).
    #[error("the MCP connection could not start: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task serving the MCP connection failed (stdio).
    #[error("the MCP connection's task failed: {0}")]
    Connection(#[from] tokio::task::JoinError),
    /// `audit` found tools that fail a rule of the routing checklist (the report, printed
    /// before, says which).
    #[error("the audit found {}", failures_in_words(*.failures))]
    AuditFailed {
        /// How many (tool, rule) pairs fail.
        failures: usize,
    },
}

fn failures_in_words(failures: usize) -> String {
    match failures {
        1 => "1 failure".to_string(),
        n => format!("{n} failures"),
    }
}

/// The message itself: what `main` returning `Result<_, ServeError>` prints.
impl std::fmt::Debug for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl From<rmcp::service::ServerInitializeError> for ServeError {
    fn from(error: rmcp::service::ServerInitializeError) -> Self {
        Self::Initialize(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_audit_says_how_many_failures() {
        assert_eq!(ServeError::AuditFailed { failures: 1 }.to_string(), "the audit found 1 failure");
        assert_eq!(ServeError::AuditFailed { failures: 3 }.to_string(), "the audit found 3 failures");
    }
}

//! The command line every toolgate server understands ([`ServerBuilder::run_cli`]):
//!
//! - `serve [OPTIONS]` — serve MCP over stdio, or Streamable HTTP with `--http ADDR`. The
//!   default: `<server> [OPTIONS]` is `<server> serve [OPTIONS]`.
//! - `describe [--format mermaid|dot|json|svg]` — the machines as state diagrams.
//! - `export --xstate` — the machines as XState v5 JSON.
//! - `audit [--format table|json] [WHO MAY CALL]` — the tools graded against the routing
//!   checklist, their scopes against the principals `--token`, `--tokens`,
//!   `--stdio-principal` and `--jwt-issuer` give; a failure exits with an error.
//! - `redis-restored --store URL [--mint-margin N]` — after Redis was restored from a
//!   backup, before the servers start: a new marker, every key counter advanced.
//!
//! `--help` lists them, and each command's `--help` its options. The grammar is in
//! `args`; `serve` in `serve`; the three that print in `print`; `redis-restored` in
//! `restored`.

mod args;
mod print;
mod restored;
mod serve;
mod values;

use super::ServerBuilder;
use crate::registry::StartupError;
use args::Invocation;

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

impl ServerBuilder {
    /// Does what the command line says (`--help` lists it):
    ///
    /// - `serve`, the default (its options work without the word): builds the server and
    ///   serves it over stdio, or with `--http ADDR` Streamable HTTP at
    ///   `http://ADDR/mcp` (`--stateless` without sessions);
    /// - `describe [--format mermaid|dot|json|svg]`: prints the machines as state diagrams;
    /// - `export --xstate`: prints the machines as XState v5 JSON, by machine id;
    /// - `audit [--format table|json]`: prints every tool graded against the routing
    ///   checklist, and returns [`ServeError::AuditFailed`] when a tool fails a rule;
    /// - `redis-restored --store URL`: after Redis was restored from a backup, writes a new
    ///   marker and advances every key counter (`RedisStoreBuilder::restored_from_backup`).
    ///
    /// `describe`, `export` and `audit` read the checked registry alone: no store is
    /// opened (no `./<server name>.db` created). Logs go to stderr (stdout is the protocol
    /// on stdio, and the output of the other commands); `RUST_LOG` filters them.
    pub async fn run_cli(self) -> Result<(), ServeError> {
        self.run_cli_from(std::env::args_os()).await
    }

    /// [`run_cli`](Self::run_cli) with these arguments rather than the process's (the
    /// first is the program's name): for a binary that takes options of its own and
    /// passes toolgate the rest.
    pub async fn run_cli_from<I, T>(self, args: I) -> Result<(), ServeError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        init_logging();
        match args::parse(args)? {
            Invocation::Help(help) => print::print_help(&help),
            Invocation::Serve(serve) => self.serve_as(*serve).await,
            Invocation::Describe(format) => self.print_description(format),
            Invocation::ExportXstate => self.print_xstate(),
            Invocation::Audit(audit) => self.print_audit(audit),
            Invocation::RedisRestored(restored) => self.mark_restored(restored).await,
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A binary that already installed a subscriber keeps it.
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).try_init();
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

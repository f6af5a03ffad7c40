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
use super::serve_error::ServeError;
use args::Invocation;

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
        let invocation = args::parse(args)?;
        let format = match &invocation {
            Invocation::Serve(serve) => serve.log_format.unwrap_or_default(),
            _ => args::LogFormat::Text,
        };
        init_logging(format);
        match invocation {
            Invocation::Help(help) => print::print_help(&help),
            Invocation::Serve(serve) => self.serve_as(*serve).await,
            Invocation::Describe(format) => self.print_description(format),
            Invocation::ExportXstate => self.print_xstate(),
            Invocation::Audit(audit) => self.print_audit(audit),
            Invocation::RedisRestored(restored) => self.mark_restored(restored).await,
        }
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `warn`), as `format` says: in JSON, one
/// object a line, each event with the fields of the call it belongs to, and a line as each
/// call's `tool_call` span closes (its tool, principal, outcome, latency).
fn init_logging(format: args::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let text = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    // A binary that already installed a subscriber keeps it.
    let _ = match format {
        args::LogFormat::Text => text.try_init(),
        args::LogFormat::Json => text
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .try_init(),
    };
}

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
//! Every option can also be given as an environment variable, `TOOLGATE_<OPTION>` (its
//! help names it): the option wins over its variable, the variable over the default.
//! Secrets can come from files (`--tokens`, `--handle-key-file`, `--jwt-secret-file`).
//!
//! `--help` lists them, and each command's `--help` its options. The grammar is in
//! `args`; `serve` in `serve`; the three that print in `print`; `redis-restored` in
//! `restored`; where each value came from in `sources`; the secrets read from files in
//! `secrets`.

mod args;
mod print;
mod restored;
mod secrets;
mod serve;
mod serve_args;
mod sources;
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
    ///
    /// Every option can also be given as an environment variable, `TOOLGATE_<OPTION>`
    /// (`--max-sessions` as `TOOLGATE_MAX_SESSIONS`; `--help` names each): the option wins
    /// over its variable, the variable over the default.
    pub async fn run_cli(self) -> Result<(), ServeError> {
        self.run_cli_from(std::env::args_os()).await
    }

    /// [`run_cli`](Self::run_cli) with these arguments rather than the process's (the
    /// first is the program's name). A server with options of its own declares them
    /// with [`run_cli_with`](Self::run_cli_with) instead, rather than rewriting them.
    pub async fn run_cli_from<I, T>(self, args: I) -> Result<(), ServeError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        self.run(args, |command| command, |_, builder| Ok(builder)).await
    }

    /// [`run_cli`](Self::run_cli), with options of this server's own on its command line:
    /// `A`'s, parsed with toolgate's. They are `serve`'s options (`<server> --http ADDR
    /// --settle-seconds 2`), listed in `--help` under their own heading (the struct's
    /// `#[command(next_help_heading = "…")]`; "This server's options" without one), and may
    /// be given as environment variables too (`#[arg(long, env = "…")]`). `configure`
    /// receives them with the builder before the command runs; for a command other than
    /// `serve` (`describe`, `audit`…), `A` holds its variables and defaults, so give
    /// `A`'s options defaults (or make them `Option`s) for those to run without them.
    /// Their names must not be toolgate's (`--help` lists those).
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// /// The payment processor this server talks to.
    /// #[derive(clap::Args)]
    /// #[command(next_help_heading = "Processor")]
    /// struct Processor {
    ///     /// The processor's URL
    ///     #[arg(long, env = "PROCESSOR_URL", default_value = "https://processor.example")]
    ///     processor_url: String,
    ///     /// How long the processor may take to answer, in seconds
    ///     #[arg(long, env = "PROCESSOR_TIMEOUT", default_value_t = 10)]
    ///     processor_timeout: u64,
    /// }
    ///
    /// /// What the handlers read (`State<ProcessorConfig>`).
    /// #[derive(Clone)]
    /// struct ProcessorConfig {
    ///     url: String,
    ///     timeout: Duration,
    /// }
    ///
    /// # async fn main_() -> Result<(), toolgate_runtime::server::ServeError> {
    /// toolgate_runtime::Server::from_registry("payments")
    ///     .run_cli_with(|processor: Processor, server| {
    ///         let timeout = Duration::from_secs(processor.processor_timeout);
    ///         server.state(ProcessorConfig { url: processor.processor_url, timeout })
    ///     })
    ///     .await
    /// # }
    /// ```
    pub async fn run_cli_with<A, F>(self, configure: F) -> Result<(), ServeError>
    where
        A: clap::Args,
        F: FnOnce(A, ServerBuilder) -> ServerBuilder,
    {
        let configure = |matches: &clap::ArgMatches, builder| {
            let own = args::own_options::<A>(matches, A::augment_args)?;
            Ok(configure(own, builder))
        };
        self.run(std::env::args_os(), A::augment_args, configure).await
    }

    /// Reads `args` (with the server's `own` options), has `configure` apply those to the
    /// builder, and runs the command.
    async fn run<I, T>(
        self,
        args: I,
        own: args::OwnOptions,
        configure: impl FnOnce(&clap::ArgMatches, ServerBuilder) -> Result<ServerBuilder, ServeError>,
    ) -> Result<(), ServeError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString>,
    {
        let (invocation, own_matches) = args::parse(args, own)?;
        let format = match &invocation {
            Invocation::Serve(serve) => serve.log_format.unwrap_or_default(),
            _ => args::LogFormat::Text,
        };
        init_logging(format);
        let server = match &own_matches {
            Some(matches) => configure(matches, self)?,
            None => self,
        };
        match invocation {
            Invocation::Help(help) => print::print_help(&help),
            Invocation::Serve(serve) => server.serve_as(*serve).await,
            Invocation::Describe(format) => server.print_description(format),
            Invocation::ExportXstate => server.print_xstate(),
            Invocation::Audit(audit) => server.print_audit(audit),
            Invocation::RedisRestored(restored) => server.mark_restored(restored).await,
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

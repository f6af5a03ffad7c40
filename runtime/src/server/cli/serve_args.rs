//! `serve`'s options, in clap: how the server is served, where its state lives, who may
//! call it. Each can be given as its environment variable too (`env = "TOOLGATE_…"`): a
//! switch's variable is true or false (`BoolishValueParser`: also 1/0, yes/no, on/off), a
//! repeatable option's a comma-separated list (`value_delimiter`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{BoolishValueParser, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Args, ValueEnum};

use super::sources::Sources;
use super::values::{client_rate_limit, delay, duration, listed, positive, socket_address};
use crate::action::RateLimit;

/// The headings `serve`'s options are grouped under.
const STORE: &str = "Store";
pub(super) const HTTP: &str = "HTTP options";
const CONFIRMATIONS: &str = "Confirmations";

/// `serve --log-format`: how log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum LogFormat {
    /// For a person reading a terminal.
    #[default]
    Text,
    /// One JSON object a line, for a log pipeline.
    Json,
}

/// `serve --exposition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ExpositionArg {
    /// A tool per action
    Flat,
    /// A tool per domain, with an `action` argument
    Grouped,
}

impl From<ExpositionArg> for crate::registry::Exposition {
    fn from(exposition: ExpositionArg) -> Self {
        match exposition {
            ExpositionArg::Flat => Self::Flat,
            ExpositionArg::Grouped => Self::Grouped,
        }
    }
}

/// `serve`'s options: how the server is served, where its state lives, who may call it.
#[derive(Debug, Default, PartialEq, Args)]
pub(super) struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080;
    /// port 0 picks one); without it, MCP over stdio
    #[arg(long, env = "TOOLGATE_HTTP", value_name = "ADDR", value_parser = socket_address, verbatim_doc_comment)]
    pub(super) http: Option<SocketAddr>,
    /// How log lines are written to stderr: `text` (the default) or
    /// `json`, one object a line; each call ends with a `tool_call` line
    /// naming its tool, principal, verdict, code, latency and
    /// correlation id (RUST_LOG=info)
    #[arg(long, env = "TOOLGATE_LOG_FORMAT", value_name = "FORMAT", hide_possible_values = true, verbatim_doc_comment)]
    pub(super) log_format: Option<LogFormat>,
    /// How long a state handle lives after its last use
    /// (default 3600; `250ms` too)
    #[arg(long, env = "TOOLGATE_HANDLE_TTL", value_name = "SECONDS", value_parser = duration, verbatim_doc_comment)]
    pub(super) handle_ttl: Option<Duration>,
    /// A file holding the key that signs state handles, as
    /// TOOLGATE_HANDLE_KEY would (a mounted secret; a trailing
    /// newline is not part of the key)
    #[arg(long, env = "TOOLGATE_HANDLE_KEY_FILE", value_name = "PATH", verbatim_doc_comment)]
    pub(super) handle_key_file: Option<PathBuf>,
    /// A tool per action (`flat`, the default) or per domain
    /// (`grouped`: an `action` argument names the action)
    #[arg(long, env = "TOOLGATE_EXPOSITION", value_name = "HOW", hide_possible_values = true, verbatim_doc_comment)]
    pub(super) exposition: Option<ExpositionArg>,
    /// Bytes of JSON one instance's data (its `context`) may hold
    /// (default 65536); past them, CONTEXT_TOO_LARGE
    #[arg(long = "max-context", env = "TOOLGATE_MAX_CONTEXT", value_name = "BYTES", value_parser = positive, help_heading = STORE, verbatim_doc_comment)]
    pub(super) max_context_bytes: Option<usize>,
    /// How long an MCP task and its result are kept, from its creation
    /// (its ttlMs; default 900)
    #[arg(long, env = "TOOLGATE_TASK_TTL", value_name = "SECONDS", value_parser = duration, help_heading = STORE, verbatim_doc_comment)]
    pub(super) task_ttl: Option<Duration>,
    /// MCP tasks one principal may run at once (default 16;
    /// 256 in all); past them, RATE_LIMITED
    #[arg(long, env = "TOOLGATE_MAX_TASKS", value_name = "N", value_parser = positive, help_heading = STORE, verbatim_doc_comment)]
    pub(super) max_tasks: Option<usize>,
    /// Shorten or lengthen how long a state lasts before time moves it
    /// (its first `after`): `quoted=2s` (every machine's `quoted`) or
    /// `bus.quoted=PT30M`; repeatable
    #[arg(long = "after", env = "TOOLGATE_AFTER", value_delimiter = ',', value_name = "STATE=TIME", value_parser = delay, verbatim_doc_comment)]
    pub(super) delays: Vec<crate::registry::DelayOverride>,
    /// Serve Prometheus metrics at http://ADDR/metrics
    /// (e.g. 127.0.0.1:9464)
    #[arg(long, env = "TOOLGATE_METRICS", value_name = "ADDR", value_parser = socket_address, verbatim_doc_comment)]
    pub(super) metrics: Option<SocketAddr>,
    /// Serve the operator's console at http://ADDR/ (e.g. 127.0.0.1:9465):
    /// read-only, for principals with the `toolgate:operator` scope
    #[arg(long, env = "TOOLGATE_CONSOLE", value_name = "ADDR", value_parser = socket_address, verbatim_doc_comment)]
    pub(super) console: Option<SocketAddr>,
    /// Append every committed transition to PATH as a JSON line
    /// (machine, instance, principal, from, to, event, tool, time, call id)
    #[arg(long = "audit-log", env = "TOOLGATE_AUDIT_LOG", value_name = "PATH", verbatim_doc_comment)]
    pub(super) audit_log: Option<PathBuf>,
    // Who may call: tokens and the stdio principal (shared with `audit`).
    #[command(flatten)]
    pub(super) callers: CallerArgs,

    /// Where state lives: `sqlite:PATH` (default: sqlite:./<server name>.db,
    /// kept across restarts), `redis://HOST:PORT/DB` or
    /// `postgres://USER@HOST:PORT/DB` (shared by replicas; need
    /// TOOLGATE_HANDLE_KEY), or `memory` (forgotten at exit; for tests)
    #[arg(long, env = "TOOLGATE_STORE", value_name = "STORE", help_heading = STORE, verbatim_doc_comment)]
    pub(super) store: Option<String>,
    /// How long a Redis or Postgres lease lives unless renewed (default 10;
    /// `500ms` too): how long a crashed replica keeps an instance from the
    /// others
    #[arg(long, env = "TOOLGATE_LEASE_TTL", value_name = "SECS", value_parser = duration, help_heading = STORE, verbatim_doc_comment)]
    pub(super) lease_ttl: Option<Duration>,
    /// For `rediss://` (TLS): trust only the certificate authorities in this
    /// PEM file (default: the system's)
    #[arg(long, env = "TOOLGATE_REDIS_CA", value_name = "FILE", help_heading = STORE, verbatim_doc_comment)]
    pub(super) redis_ca: Option<PathBuf>,
    /// How long one attempt of an effect may run before it is tried again
    /// (default 30; `500ms` too): also how long (and a second more) an
    /// attempt a crashed process had claimed waits before another process
    /// records it as cut off and tries again
    #[arg(long, env = "TOOLGATE_EFFECT_TIMEOUT", value_name = "SECS", value_parser = duration, help_heading = STORE, verbatim_doc_comment)]
    pub(super) effect_timeout: Option<Duration>,
    /// How many attempts of an effect may end in an error before it is
    /// dead-lettered (default 5, which is about 15 s of an outage; the waits
    /// between them double from 1 s up to 5 minutes, each drawn between its
    /// half and its whole: 36 outlast an hour's outage of the destination)
    #[arg(long, env = "TOOLGATE_EFFECT_ATTEMPTS", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = STORE, verbatim_doc_comment)]
    pub(super) effect_attempts: Option<u32>,
    /// How many attempts of an effect may be cut off (their process stopped
    /// before they ended) before it is dead-lettered (default 10)
    #[arg(long, env = "TOOLGATE_EFFECT_CUT_OFFS", value_name = "N", help_heading = STORE, verbatim_doc_comment)]
    pub(super) effect_cut_offs: Option<u32>,
    /// Accept a Redis that loses what it holds when it restarts (no
    /// append-only file synced on each write, no replica): refused otherwise
    #[arg(long, env = "TOOLGATE_REDIS_VOLATILE", value_parser = BoolishValueParser::new(), help_heading = STORE, verbatim_doc_comment)]
    pub(super) redis_volatile: bool,

    /// No sessions (MCP 2026-07-28); conversations travel in
    /// state handles
    #[arg(long, env = "TOOLGATE_STATELESS", value_parser = BoolishValueParser::new(), help_heading = HTTP, verbatim_doc_comment)]
    pub(super) stateless: bool,
    /// Keys travel as Mcp-Param-{Key} headers too, for routing by
    /// object (2026-07-28 requests must then send them)
    #[arg(long, env = "TOOLGATE_KEY_HEADERS", value_parser = BoolishValueParser::new(), help_heading = HTTP, verbatim_doc_comment)]
    pub(super) key_headers: bool,
    /// A Host name to answer (repeatable; default: loopback names)
    #[arg(long = "allowed-host", env = "TOOLGATE_ALLOWED_HOST", value_delimiter = ',', value_parser = listed, value_name = "HOST", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) allowed_hosts: Vec<String>,
    /// A browser Origin to accept, e.g. https://app.example.com:443
    /// (repeatable; default: loopback pages); other Origins get 403
    #[arg(long = "allowed-origin", env = "TOOLGATE_ALLOWED_ORIGIN", value_delimiter = ',', value_parser = listed, value_name = "ORIGIN", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) allowed_origins: Vec<String>,
    /// Live sessions at most (default 1000); past them, 503
    #[arg(long, env = "TOOLGATE_MAX_SESSIONS", value_name = "N", value_parser = positive, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) max_sessions: Option<usize>,
    /// Open subscriptions/listen streams at most (default 1000); past
    /// them, 503
    #[arg(long, env = "TOOLGATE_MAX_LISTEN_STREAMS", value_name = "N", value_parser = positive, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) max_listen_streams: Option<usize>,
    /// Open listen streams one client (principal, or peer IP without
    /// a token) may hold (default 16); past them, 503
    #[arg(long, env = "TOOLGATE_MAX_CLIENT_STREAMS", value_name = "N", value_parser = positive, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) max_client_streams: Option<usize>,
    /// Seconds a request's headers, then its body, have to arrive
    /// (default 10; `500ms` too); slower connections are closed
    #[arg(long, env = "TOOLGATE_REQUEST_READ_TIMEOUT", value_name = "SECS", value_parser = duration, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) request_read_timeout: Option<Duration>,
    /// Seconds a stopping server (SIGTERM, SIGINT) still serves
    /// new requests, `/readyz` failing, before it stops accepting
    /// (default 5)
    #[arg(long, env = "TOOLGATE_DRAIN_DELAY", value_name = "SECS", value_parser = duration, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) drain_delay: Option<Duration>,
    /// Seconds a stopping server then waits for calls and tasks in
    /// flight (default 30); tasks still running are given up
    #[arg(long, env = "TOOLGATE_SHUTDOWN_GRACE", value_name = "SECS", value_parser = duration, verbatim_doc_comment)]
    pub(super) shutdown_grace: Option<Duration>,
    /// Open connections one peer IP may hold (default 256); past
    /// them, new ones are closed
    #[arg(long, env = "TOOLGATE_MAX_CLIENT_CONNECTIONS", value_name = "N", value_parser = positive, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) max_client_connections: Option<usize>,
    /// Open connections the MCP endpoint holds in all (default
    /// 10,000; keep it under `ulimit -n`); past them, new ones are
    /// closed. The console and metrics have small caps of their own
    #[arg(long, env = "TOOLGATE_MAX_CONNECTIONS", value_name = "N", value_parser = positive, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) max_connections: Option<usize>,
    /// Close a session idle this long (default 300; `250ms` too)
    #[arg(long, env = "TOOLGATE_SESSION_IDLE_TIMEOUT", value_name = "SECS", value_parser = duration, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) session_idle_timeout: Option<Duration>,
    /// Requests one client (peer IP) may send per second, minute or
    /// hour, e.g. 600/minute (default: no limit); past it, 429 with
    /// Retry-After
    #[arg(long, env = "TOOLGATE_CLIENT_RATE_LIMIT", value_name = "N/UNIT", value_parser = client_rate_limit, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) client_rate_limit: Option<RateLimit>,
    /// Accept JWT bearer tokens from issuer ISS (feature `jwt`) for
    /// `--jwt-audience`, signed with the keys at `--jwks-url`
    /// (RS256/ES256) or the secret in `--jwt-secret-env` (HS256)
    #[arg(long, env = "TOOLGATE_JWT_ISSUER", value_name = "ISS", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) jwt_issuer: Option<String>,
    /// The audience JWTs must name (this server's resource URL)
    #[arg(long, env = "TOOLGATE_JWT_AUDIENCE", value_name = "AUD", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) jwt_audience: Option<String>,
    /// Where the keys that sign JWTs are published (a JWKS)
    #[arg(long, env = "TOOLGATE_JWKS_URL", value_name = "URL", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) jwks_url: Option<String>,
    /// The environment variable holding the secret that signs JWTs
    #[arg(long, env = "TOOLGATE_JWT_SECRET_ENV", value_name = "VAR", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) jwt_secret_env: Option<String>,
    /// A file holding the secret that signs JWTs (HS256; a mounted
    /// secret: a trailing newline is not part of it)
    #[arg(long, env = "TOOLGATE_JWT_SECRET_FILE", value_name = "PATH", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) jwt_secret_file: Option<PathBuf>,
    /// This MCP endpoint's URL as an OAuth protected resource, with
    /// the `--authorization-server`s: metadata at
    /// /.well-known/oauth-protected-resource
    #[arg(long, env = "TOOLGATE_RESOURCE", value_name = "URL", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) resource: Option<String>,
    /// A token issuer of `--resource` (repeatable)
    #[arg(long = "authorization-server", env = "TOOLGATE_AUTHORIZATION_SERVER", value_delimiter = ',', value_parser = listed, value_name = "URL", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) authorization_servers: Vec<String>,
    /// Answer requests without a bearer token with 401 (default:
    /// served anonymously; tools that need a principal refuse them)
    #[arg(long, env = "TOOLGATE_REQUIRE_AUTH", value_parser = BoolishValueParser::new(), help_heading = HTTP, verbatim_doc_comment)]
    pub(super) require_auth: bool,

    /// Development only: write each one-time code of a confirmed tool
    /// as a JSON line (challenge_id, otp, principal) to PATH instead
    /// of sending it
    #[arg(long, env = "TOOLGATE_OTP_OUTBOX", value_name = "PATH", help_heading = CONFIRMATIONS, verbatim_doc_comment)]
    pub(super) otp_outbox: Option<PathBuf>,
    /// How long a confirmation challenge lives (default 300; `250ms` too)
    #[arg(long, env = "TOOLGATE_CHALLENGE_TTL", value_name = "SECS", value_parser = duration, help_heading = CONFIRMATIONS, verbatim_doc_comment)]
    pub(super) challenge_ttl: Option<Duration>,
    /// Offer codes on this server's /confirm page, as URL reaches it, to
    /// clients that take URL-mode elicitation
    #[arg(long, env = "TOOLGATE_CONFIRMATION_PAGE", value_name = "URL", help_heading = CONFIRMATIONS, verbatim_doc_comment)]
    pub(super) confirmation_page: Option<String>,

    /// The options set by their variable rather than on the command line.
    #[arg(skip)]
    pub(super) sources: Sources,
}

/// Who may call, for `serve` and for `audit` (which checks that some principal holds each
/// tool's scopes): the stdio principal and the bearer tokens.
#[derive(Debug, Default, PartialEq, Args)]
pub(super) struct CallerArgs {
    /// Who a stdio connection is: NAME with every scope the tools declare
    #[arg(long, env = "TOOLGATE_STDIO_PRINCIPAL", value_name = "NAME", verbatim_doc_comment)]
    pub(super) stdio_principal: Option<String>,
    /// A bearer token standing for PRINCIPAL with every scope the
    /// tools declare (repeatable; development and service accounts)
    #[arg(long = "token", env = "TOOLGATE_TOKENS", value_delimiter = ',', value_name = "PRINCIPAL=SECRET", value_parser = TokenParser, help_heading = HTTP, verbatim_doc_comment)]
    pub(super) tokens: Vec<Token>,
    /// Bearer tokens with their principal, tenant and scopes, each
    /// [[token]] secret = "…", principal = "clerk",
    ///           tenant = "acme", scopes = ["…"]
    #[arg(long = "tokens", env = "TOOLGATE_TOKENS_FILE", value_name = "FILE.toml", help_heading = HTTP, verbatim_doc_comment)]
    pub(super) tokens_file: Option<PathBuf>,
}

/// `--token PRINCIPAL=SECRET`. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq)]
pub(super) struct Token {
    pub(super) principal: String,
    pub(super) secret: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token").field("principal", &self.principal).finish_non_exhaustive()
    }
}

impl Token {
    /// `PRINCIPAL=SECRET`, for `source` (the flag, or its variable). The secret never
    /// appears in the message.
    pub(super) fn parse(source: &str, value: &str) -> Result<Self, String> {
        match value.split_once('=') {
            Some((principal, secret)) if !principal.trim().is_empty() && !secret.is_empty() => {
                Ok(Self { principal: principal.trim().to_string(), secret: secret.to_string() })
            }
            _ => Err(format!("{source}: a token is `PRINCIPAL=SECRET`, both non-empty")),
        }
    }
}

/// Parses `--token`. Not a plain function as the other flags' parsers: clap's message for
/// those quotes the value, and this value is a secret.
#[derive(Clone)]
struct TokenParser;

impl TypedValueParser for TokenParser {
    type Value = Token;

    fn parse_ref(
        &self,
        command: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Token, clap::Error> {
        let value = value.to_str().unwrap_or_default();
        Token::parse("`--token`", value)
            .map_err(|message| clap::Error::raw(ErrorKind::ValueValidation, message).format(&mut command.clone()))
    }
}

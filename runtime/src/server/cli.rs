//! The command line every toolgate server understands.

use std::net::SocketAddr;
use std::time::Duration;

use super::ServerBuilder;
use crate::action::RateLimit;
use crate::registry::StartupError;

const USAGE: &str = "usage: <server> [--http ADDR [HTTP OPTIONS]] [--handle-ttl SECONDS]

  (no flag)             serve MCP over stdio
  --http ADDR           serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080; port 0 picks one)
  --handle-ttl SECONDS  how long a state handle lives after its last use (default 3600; `250ms` too)
  --store STORE         where state lives: `sqlite:PATH` (default: sqlite:./<server name>.db, kept
                        across restarts), `redis://HOST:PORT/DB` (shared by replicas; needs
                        TOOLGATE_HANDLE_KEY), or `memory` (forgotten at exit; for tests)
  --lease-ttl SECS      how long a Redis lease lives unless renewed (default 10; `500ms` too): how
                        long a crashed replica keeps an instance from the others
  --redis-ca FILE       for `rediss://` (TLS): trust only the certificate authorities in this PEM
                        file (default: the system's)

HTTP options:
  --stateless                  no sessions (MCP 2026-07-28); conversations travel in state handles
  --allowed-host HOST          a Host name to answer (repeatable; default: loopback names only)
  --allowed-origin ORIGIN      a browser Origin to accept, e.g. https://app.example.com:443 (repeatable;
                               default: loopback pages); other Origins get 403
  --max-sessions N             live sessions at most (default 1000); past them, 503
  --session-idle-timeout SECS  close a session idle this long (default 300; `250ms` too)
  --client-rate-limit N/UNIT   requests one client (peer IP) may send per second, minute or hour,
                               e.g. 600/minute (default: no limit); past it, 429 with Retry-After
  --token PRINCIPAL=SECRET     a bearer token standing for PRINCIPAL with every scope the tools declare
                               (repeatable; development and service accounts)
  --tokens FILE.toml           bearer tokens with their principal, tenant and scopes:
                               [[token]] secret = \"…\", principal = \"clerk\", tenant = \"acme\", scopes = [\"…\"]
  --jwt-issuer ISS             accept JWT bearer tokens from issuer ISS (builds with feature `jwt`),
  --jwt-audience AUD             for audience AUD (this server's resource URL), signed with the keys at
  --jwks-url URL                 URL (RS256/ES256), or HS256 with the secret in the environment
  --jwt-secret-env VAR           variable VAR
  --resource URL               this MCP endpoint's URL as an OAuth protected resource, with
  --authorization-server URL   its token issuer (repeatable): metadata at /.well-known/oauth-protected-resource
  --require-auth               answer requests without a bearer token with 401 (default: served
                               anonymously; tools that need a principal refuse them)

  --otp-outbox PATH     development only: write each one-time code of a confirmed tool as a JSON
                        line (challenge_id, otp, principal) to PATH instead of sending it
  --challenge-ttl SECS  how long a confirmation challenge lives (default 300; `250ms` too)
  --confirmation-page URL  offer codes on this server's /confirm page, as URL reaches it, to clients
                        that take URL-mode elicitation

  TOOLGATE_HANDLE_KEY   the key (32 bytes or more) that signs state handles; set the same one on every replica
  --stdio-principal NAME   who a stdio connection is: NAME with every scope the tools declare

  TOOLGATE_STORE        the store, as `--store` gives it (the flag wins)
  TOOLGATE_REDIS_CA     the PEM file `--redis-ca` gives (the flag wins)
  TOOLGATE_TOKENS       more tokens, as `--token` gives them: `clerk=s3cret,auditor=t0ken`";

/// A Redis store, in a build with the `redis` feature: connected before the server is
/// built; a Redis that cannot be reached stops the start.
#[cfg(feature = "redis")]
async fn redis_store(builder: ServerBuilder, url: &str, options: &RedisOptions) -> Result<ServerBuilder, ServeError> {
    use crate::store::RedisStore;
    let connected = match &options.ca {
        None => RedisStore::connect(url).await,
        Some(path) => {
            let pem =
                std::fs::read(path).map_err(|e| ServeError::Usage(format!("`--redis-ca {}`: {e}", path.display())))?;
            RedisStore::connect_trusting(url, &pem).await
        }
    };
    let lease_ttl = options.lease_ttl;
    let store = connected
        .map_err(|error| ServeError::Store(format!("`--store {}`: cannot reach Redis: {error}", redacted(url))))?;
    Ok(builder.store(match lease_ttl {
        Some(ttl) => store.with_lease_ttl(ttl),
        None => store,
    }))
}

/// `url` as a message may show it: a password it carries is replaced by `***`.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(_) => url.to_string(),
        Err(_) => "(an unreadable URL)".to_string(),
    }
}

#[cfg(not(feature = "redis"))]
async fn redis_store(_builder: ServerBuilder, url: &str, _options: &RedisOptions) -> Result<ServerBuilder, ServeError> {
    Err(ServeError::Usage(format!(
        "`--store {}`: this server was built without Redis (toolgate's `redis` feature)",
        redacted(url)
    )))
}

/// The store, from the environment: `sqlite:PATH`, `redis://HOST:PORT/DB` or `memory`.
const STORE_ENV: &str = "TOOLGATE_STORE";

/// The certificate authorities to trust for `rediss://`, from the environment (a PEM file).
const REDIS_CA_ENV: &str = "TOOLGATE_REDIS_CA";

/// How a Redis store is connected and leased.
#[derive(Debug, PartialEq, Default)]
struct RedisOptions {
    /// `--lease-ttl`.
    lease_ttl: Option<Duration>,
    /// `--redis-ca` (or `TOOLGATE_REDIS_CA`): trust only these authorities.
    ca: Option<std::path::PathBuf>,
}

impl ServerBuilder {
    /// The store the command line (or `TOOLGATE_STORE`) names; without one, the store the
    /// builder was given, else the file `./<server name>.db`.
    async fn store_from(self, spec: Option<&str>, redis: &RedisOptions) -> Result<Self, ServeError> {
        match spec {
            Some("memory") => {
                tracing::warn!("state is kept in memory (`--store memory`): a restart forgets every transition");
                Ok(self.store(crate::store::MemoryStore::new()))
            }
            Some(spec) if spec.starts_with("sqlite:") && spec.len() > "sqlite:".len() => {
                Ok(self.store_file(&spec["sqlite:".len()..]))
            }
            Some(spec) if spec.starts_with("redis://") || spec.starts_with("rediss://") => {
                redis_store(self, spec, redis).await
            }
            Some(other) => Err(ServeError::Usage(format!(
                "`--store {other}`: a store is `sqlite:PATH`, `redis://HOST:PORT/DB` or `memory`"
            ))),
            None if self.store.is_some() || self.store_file.is_some() => Ok(self),
            None => {
                let path = format!("./{}.db", self.name);
                Ok(self.store_file(path))
            }
        }
    }
}

/// More `--token`s, from the environment: `clerk=s3cret,auditor=t0ken`.
const TOKENS_ENV: &str = "TOOLGATE_TOKENS";

/// Why a server stopped with an error.
#[derive(thiserror::Error)]
pub enum ServeError {
    /// The registry is invalid.
    #[error(transparent)]
    Startup(#[from] StartupError),
    /// The command line is wrong.
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    /// The store named on the command line cannot be used.
    #[error("{0}")]
    Store(String),
    /// Binding or serving failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP connection could not start (stdio).
    #[error("the MCP connection could not start: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task serving the MCP connection failed (stdio).
    #[error("the MCP connection's task failed: {0}")]
    Connection(#[from] tokio::task::JoinError),
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

#[derive(Debug, PartialEq, Default)]
enum Mode {
    #[default]
    Stdio,
    Http(SocketAddr),
    Help,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Default)]
struct Command {
    mode: Mode,
    stateless: bool,
    handle_ttl: Option<Duration>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    max_sessions: Option<usize>,
    session_idle_timeout: Option<Duration>,
    client_rate_limit: Option<RateLimit>,
    /// `--token PRINCIPAL=SECRET`s.
    tokens: Vec<(String, String)>,
    require_auth: bool,
    otp_outbox: Option<std::path::PathBuf>,
    tokens_file: Option<std::path::PathBuf>,
    challenge_ttl: Option<Duration>,
    stdio_principal: Option<String>,
    jwt_issuer: Option<String>,
    jwt_audience: Option<String>,
    jwks_url: Option<String>,
    jwt_secret_env: Option<String>,
    resource: Option<String>,
    authorization_servers: Vec<String>,
    confirmation_page: Option<String>,
    store: Option<String>,
    lease_ttl: Option<Duration>,
    redis_ca: Option<String>,
}

/// How the `--jwt-*` flags configure the server, if they are given.
type Configure = Box<dyn FnOnce(ServerBuilder) -> ServerBuilder>;

fn jwt_authenticator(command: &Command) -> Result<Option<Configure>, ServeError> {
    let given = command.jwt_issuer.is_some()
        || command.jwt_audience.is_some()
        || command.jwks_url.is_some()
        || command.jwt_secret_env.is_some();
    if !given {
        return Ok(None);
    }
    let (Some(issuer), Some(audience)) = (command.jwt_issuer.clone(), command.jwt_audience.clone()) else {
        return Err(ServeError::Usage("JWTs need both `--jwt-issuer` and `--jwt-audience`".into()));
    };
    #[cfg(feature = "jwt")]
    {
        use crate::auth::JwtAuthenticator;
        let jwt = match (&command.jwks_url, &command.jwt_secret_env) {
            (Some(url), None) => JwtAuthenticator::jwks(issuer, audience, url.clone()),
            (None, Some(variable)) => {
                let secret = std::env::var(variable).map_err(|_| {
                    ServeError::Usage(format!("`--jwt-secret-env {variable}`: the variable is not set"))
                })?;
                JwtAuthenticator::hs256(issuer, audience, secret.as_bytes())
                    .map_err(|e| ServeError::Usage(format!("`--jwt-secret-env {variable}`: {e}")))?
            }
            _ => {
                return Err(ServeError::Usage(
                    "JWTs need exactly one of `--jwks-url URL` and `--jwt-secret-env VAR`".into(),
                ));
            }
        };
        Ok(Some(Box::new(move |builder: ServerBuilder| builder.authenticator(jwt))))
    }
    #[cfg(not(feature = "jwt"))]
    {
        let _ = (issuer, audience);
        Err(ServeError::Usage("this server was built without JWT support (toolgate's `jwt` feature)".into()))
    }
}

/// One `[[token]]` of a `--tokens` file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    secret: String,
    principal: String,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
}

/// A `--tokens` file: `[[token]]` tables.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
}

/// The tokens of the `--tokens` file at `path`. Its errors never quote a secret.
fn tokens_file(path: &std::path::Path) -> Result<crate::auth::StaticTokens, ServeError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| ServeError::Usage(format!("`--tokens {shown}`: {e}")))?;
    let file: TokensFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| text[..span.start].lines().count().max(1));
        let at = line.map(|line| format!(" (line {line})")).unwrap_or_default();
        ServeError::Usage(format!("`--tokens {shown}`: not a tokens file{at}: each `[[token]]` has `secret`, `principal`, and optionally `tenant` and `scopes`"))
    })?;
    let mut tokens = crate::auth::StaticTokens::new();
    for entry in file.token {
        if entry.secret.len() < 16 {
            return Err(ServeError::Usage(format!(
                "`--tokens {shown}`: the token of `{}` is shorter than 16 characters",
                entry.principal
            )));
        }
        let mut principal = crate::auth::Principal::new(entry.principal).with_scopes(entry.scopes);
        if let Some(tenant) = entry.tenant {
            principal = principal.with_tenant(tenant);
        }
        tokens = tokens.token(entry.secret, principal);
    }
    Ok(tokens)
}

/// `PRINCIPAL=SECRET`, for `source` (a flag, or `TOOLGATE_TOKENS`). The secret never
/// appears in a message.
fn token(source: &str, value: &str) -> Result<(String, String), ServeError> {
    match value.split_once('=') {
        Some((principal, secret)) if !principal.trim().is_empty() && !secret.is_empty() => {
            Ok((principal.trim().to_string(), secret.to_string()))
        }
        _ => Err(ServeError::Usage(format!("{source}: a token is `PRINCIPAL=SECRET`, both non-empty"))),
    }
}

/// A duration above zero for `flag`: whole seconds (`30`, `30s`) or milliseconds (`250ms`),
/// so a test can run a server whose handles or sessions expire within a blink.
fn duration(flag: &str, value: Option<String>) -> Result<Duration, ServeError> {
    let value = value.ok_or_else(|| ServeError::Usage(format!("`{flag}` needs a duration, e.g. `30` (seconds)")))?;
    let (number, from): (&str, fn(u64) -> Duration) = match value.strip_suffix("ms") {
        Some(ms) => (ms, Duration::from_millis),
        None => (value.strip_suffix('s').unwrap_or(&value), Duration::from_secs),
    };
    number.parse::<u64>().ok().filter(|&n| n > 0).map(from).ok_or_else(|| {
        ServeError::Usage(format!("`{flag} {value}`: not a duration above 0 (seconds, or e.g. `250ms`)"))
    })
}

/// A whole number above zero, for `flag`.
fn positive(flag: &str, value: Option<String>) -> Result<u64, ServeError> {
    let value = value.ok_or_else(|| ServeError::Usage(format!("`{flag}` needs a number")))?;
    value
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| ServeError::Usage(format!("`{flag} {value}`: not a whole number above 0")))
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Command, ServeError> {
    let usage = |message: String| ServeError::Usage(message);
    let mut command = Command::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => command.mode = Mode::Help,
            "--http" if command.mode == Mode::Stdio => {
                let addr = args.next().ok_or_else(|| usage("`--http` needs an address".into()))?;
                let addr = addr.parse().map_err(|e| usage(format!("`--http {addr}`: not a socket address ({e})")))?;
                command.mode = Mode::Http(addr);
            }
            "--stateless" if !command.stateless => command.stateless = true,
            "--handle-ttl" if command.handle_ttl.is_none() => {
                command.handle_ttl = Some(duration(&arg, args.next())?);
            }
            "--allowed-host" | "--allowed-origin" => {
                let value = args.next().ok_or_else(|| usage(format!("`{arg}` needs a value")))?;
                let list =
                    if arg == "--allowed-host" { &mut command.allowed_hosts } else { &mut command.allowed_origins };
                list.push(value);
            }
            "--max-sessions" if command.max_sessions.is_none() => {
                let max = positive(&arg, args.next())?;
                command.max_sessions = Some(usize::try_from(max).unwrap_or(usize::MAX));
            }
            "--session-idle-timeout" if command.session_idle_timeout.is_none() => {
                command.session_idle_timeout = Some(duration(&arg, args.next())?);
            }
            "--client-rate-limit" if command.client_rate_limit.is_none() => {
                let value = args.next().ok_or_else(|| usage(format!("`{arg}` needs a value, e.g. `600/minute`")))?;
                let rate = RateLimit::parse(&value).map_err(|problem| usage(format!("`{arg}` {problem}")))?;
                if value.contains(" per ") {
                    return Err(usage(format!(
                        "`{arg} {value}`: the server-wide limit always counts per client address; write only the rate, e.g. `600/minute`"
                    )));
                }
                command.client_rate_limit = Some(rate);
            }
            "--token" => {
                let value = args.next().ok_or_else(|| usage("`--token` needs `PRINCIPAL=SECRET`".into()))?;
                command.tokens.push(token("`--token`", &value)?);
            }
            "--require-auth" if !command.require_auth => command.require_auth = true,
            "--stdio-principal"
            | "--jwt-issuer"
            | "--jwt-audience"
            | "--jwks-url"
            | "--jwt-secret-env"
            | "--resource"
            | "--confirmation-page"
            | "--redis-ca"
            | "--store" => {
                let value = args.next().ok_or_else(|| usage(format!("`{arg}` needs a value")))?;
                let slot = match arg.as_str() {
                    "--stdio-principal" => &mut command.stdio_principal,
                    "--jwt-issuer" => &mut command.jwt_issuer,
                    "--jwt-audience" => &mut command.jwt_audience,
                    "--jwks-url" => &mut command.jwks_url,
                    "--jwt-secret-env" => &mut command.jwt_secret_env,
                    "--confirmation-page" => &mut command.confirmation_page,
                    "--store" => &mut command.store,
                    "--redis-ca" => &mut command.redis_ca,
                    _ => &mut command.resource,
                };
                if slot.replace(value).is_some() {
                    return Err(usage(format!("`{arg}` is given twice")));
                }
            }
            "--authorization-server" => {
                let value = args.next().ok_or_else(|| usage(format!("`{arg}` needs a URL")))?;
                command.authorization_servers.push(value);
            }
            "--tokens" if command.tokens_file.is_none() => {
                let path = args.next().ok_or_else(|| usage("`--tokens` needs a file path".into()))?;
                command.tokens_file = Some(path.into());
            }
            "--lease-ttl" if command.lease_ttl.is_none() => {
                command.lease_ttl = Some(duration(&arg, args.next())?);
            }
            "--challenge-ttl" if command.challenge_ttl.is_none() => {
                command.challenge_ttl = Some(duration(&arg, args.next())?);
            }
            "--otp-outbox" if command.otp_outbox.is_none() => {
                let path = args.next().ok_or_else(|| usage("`--otp-outbox` needs a file path".into()))?;
                command.otp_outbox = Some(path.into());
            }
            "--http"
            | "--require-auth"
            | "--otp-outbox"
            | "--tokens"
            | "--challenge-ttl"
            | "--lease-ttl"
            | "--stateless"
            | "--handle-ttl"
            | "--max-sessions"
            | "--session-idle-timeout"
            | "--client-rate-limit" => {
                return Err(usage(format!("`{arg}` is given twice")));
            }
            other if other.starts_with('-') => return Err(usage(format!("unknown argument `{other}`"))),
            other => return Err(usage(format!("unexpected argument `{other}`"))),
        }
    }
    let http_only = [
        ("--stateless", command.stateless),
        ("--allowed-host", !command.allowed_hosts.is_empty()),
        ("--allowed-origin", !command.allowed_origins.is_empty()),
        ("--max-sessions", command.max_sessions.is_some()),
        ("--session-idle-timeout", command.session_idle_timeout.is_some()),
        ("--client-rate-limit", command.client_rate_limit.is_some()),
        ("--token", !command.tokens.is_empty()),
        ("--require-auth", command.require_auth),
    ];
    if let (Some((flag, _)), false) =
        (http_only.iter().find(|(_, given)| *given), matches!(command.mode, Mode::Http(_)))
    {
        return Err(usage(format!("`{flag}` needs `--http ADDR`")));
    }
    Ok(command)
}

impl ServerBuilder {
    /// Builds the server and serves it as the command line says: stdio by default,
    /// `--http ADDR` for Streamable HTTP at `http://ADDR/mcp`, `--stateless` without
    /// sessions. Logs go to stderr (stdout is the protocol on stdio); `RUST_LOG` filters
    /// them.
    pub async fn run_cli(mut self) -> Result<(), ServeError> {
        init_logging();
        let mut command = parse(std::env::args().skip(1))?;
        let jwt = jwt_authenticator(&command)?;
        if command.stateless {
            self = self.sessionless();
        }
        if let Some(ttl) = command.handle_ttl {
            self = self.handle_ttl(ttl);
        }
        if !command.allowed_hosts.is_empty() {
            self = self.allowed_hosts(command.allowed_hosts);
        }
        if !command.allowed_origins.is_empty() {
            self = self.allowed_origins(command.allowed_origins);
        }
        if let Some(max) = command.max_sessions {
            self = self.max_sessions(max);
        }
        if let Some(timeout) = command.session_idle_timeout {
            self = self.session_idle_timeout(timeout);
        }
        if let Some(limit) = command.client_rate_limit {
            self = self.client_rate_limit(limit.calls, Duration::from_millis(limit.per_ms));
        }
        let mut tokens = std::mem::take(&mut command.tokens);
        if let Some(list) = std::env::var_os(TOKENS_ENV) {
            let list = list.into_string().map_err(|_| ServeError::Usage(format!("{TOKENS_ENV} is not UTF-8")))?;
            for entry in list.split(',').filter(|e| !e.trim().is_empty()) {
                tokens.push(token(TOKENS_ENV, entry.trim())?);
            }
        }
        for (principal, secret) in tokens {
            self = self.token_with_every_scope(principal, secret);
        }
        if command.require_auth {
            self = self.require_authentication();
        }
        if let Some(path) = &command.tokens_file {
            self = self.authenticator(tokens_file(path)?);
        }
        if let Some(jwt) = jwt {
            self = jwt(self);
        }
        if let Some(resource) = command.resource.clone() {
            if command.authorization_servers.is_empty() {
                return Err(ServeError::Usage("`--resource` needs at least one `--authorization-server URL`".into()));
            }
            self = self.protected_resource(resource, command.authorization_servers.clone());
        }
        if let Some(page) = command.confirmation_page.clone() {
            self = self.confirmation_page(page);
        }
        if let Some(name) = command.stdio_principal.clone() {
            self = self.stdio_principal_with_every_scope(name);
        }
        if let Some(ttl) = command.challenge_ttl {
            self = self.challenge_ttl(ttl);
        }
        if let Some(path) = command.otp_outbox {
            tracing::warn!(path = %path.display(), "one-time codes go to a file (--otp-outbox): for development only");
            self = self.otp_sender(crate::confirm::OutboxSender::new(path));
        }
        if command.mode == Mode::Help {
            println!("{USAGE}");
            return Ok(());
        }
        let store = command.store.clone().or_else(|| std::env::var(STORE_ENV).ok().filter(|s| !s.is_empty()));
        let redis = RedisOptions {
            lease_ttl: command.lease_ttl,
            ca: command
                .redis_ca
                .clone()
                .or_else(|| std::env::var(REDIS_CA_ENV).ok().filter(|s| !s.is_empty()))
                .map(Into::into),
        };
        self = self.store_from(store.as_deref(), &redis).await?;
        let state_file = self.store_file.clone();
        let server = self.build()?;
        if let Some(path) = state_file {
            eprintln!("toolgate: state in {}", path.display());
        }
        match command.mode {
            Mode::Http(addr) => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                // The one line a person starting the server reads (tests read it too).
                let mode = if command.stateless { " (sessionless)" } else { "" };
                eprintln!("toolgate: serving Streamable HTTP at http://{}/mcp{mode}", listener.local_addr()?);
                server.serve_http(listener).await
            }
            Mode::Stdio | Mode::Help => server.serve_stdio().await,
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

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn parses_the_modes_and_options() {
        assert_eq!(parse(args(&[])).unwrap(), Command::default());
        let hosts =
            parse(args(&["--http", "0.0.0.0:80", "--allowed-host", "a.example", "--allowed-host", "b.example"]));
        assert_eq!(hosts.unwrap().allowed_hosts, ["a.example", "b.example"]);
        let http = parse(args(&["--http", "127.0.0.1:0", "--stateless", "--handle-ttl", "5"])).unwrap();
        assert!(matches!(http.mode, Mode::Http(a) if a.port() == 0));
        assert_eq!((http.stateless, http.handle_ttl), (true, Some(Duration::from_secs(5))));
        for (written, meant) in [("7s", Duration::from_secs(7)), ("250ms", Duration::from_millis(250))] {
            let idle = parse(args(&["--http", "127.0.0.1:0", "--session-idle-timeout", written])).unwrap();
            assert_eq!(idle.session_idle_timeout, Some(meant));
        }
        assert_eq!(parse(args(&["--help"])).unwrap().mode, Mode::Help);
        let limited = parse(args(&["--http", "127.0.0.1:0", "--client-rate-limit", "600/minute"])).unwrap();
        assert_eq!(
            limited.client_rate_limit,
            Some(RateLimit { calls: 600, per_ms: 60_000, per: crate::action::RatePer::Client })
        );
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        for (line, expected) in [
            (&["--http"][..], "`--http` needs an address"),
            (&["--http", "localhost"][..], "not a socket address"),
            (&["--stdio"][..], "unknown argument `--stdio`"),
            (&["--http", "127.0.0.1:1", "x"][..], "unexpected argument `x`"),
            (&["--stateless"][..], "`--stateless` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--http", "127.0.0.1:2"][..], "`--http` is given twice"),
            (&["--handle-ttl", "0"][..], "not a duration above 0"),
            (&["--handle-ttl", "0ms"][..], "not a duration above 0"),
            (&["--handle-ttl", "5m"][..], "`--handle-ttl 5m`: not a duration"),
            (&["--max-sessions", "10"][..], "`--max-sessions` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--max-sessions", "x"][..], "`--max-sessions x`: not a whole number"),
            (&["--client-rate-limit", "5/second"][..], "`--client-rate-limit` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "600"][..], "e.g. \"30/minute\""),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "0/minute"][..], "e.g. \"30/minute\""),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "5/week"][..], "`--client-rate-limit` `5/week`"),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "5/second per tool"][..], "always counts per client"),
        ] {
            let error = parse(args(line)).expect_err("must fail").to_string();
            assert!(error.contains(expected) && error.contains("usage:"), "{line:?}: {error}");
        }
    }

    #[test]
    fn a_store_url_is_shown_without_its_password() {
        assert_eq!(redacted("rediss://:hunter2@cache.internal:6380/0"), "rediss://:***@cache.internal:6380/0");
        assert_eq!(redacted("redis://app:hunter2@10.0.0.5/1"), "redis://app:***@10.0.0.5/1");
        assert_eq!(redacted("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
        assert!(!redacted("redis://:hunter2@[bad").contains("hunter2"));
    }
}

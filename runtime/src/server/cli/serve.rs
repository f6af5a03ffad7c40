//! `serve`: the builder configured as the options say, its store opened, and the server
//! served over stdio or Streamable HTTP.

use std::time::Duration;

use super::ServeError;
use super::args::{CallerArgs, ServeArgs, Token, usage};
use super::sources::Sources;
use crate::server::ServerBuilder;
use crate::store::{OpenStoreError, StoreOptions};

impl ServerBuilder {
    /// Configures the builder as `args` say (each option, or its variable), builds the
    /// server and serves it until the transport ends.
    pub(super) async fn serve_as(mut self, args: ServeArgs) -> Result<(), ServeError> {
        let jwt = jwt_authenticator(&args)?;
        if let Some(path) = &args.handle_key_file {
            self = self.handle_key_from_file(path, &args.sources)?;
        }
        if args.stateless {
            self = self.sessionless();
        }
        if args.key_headers {
            self = self.key_headers();
        }
        if let Some(ttl) = args.handle_ttl {
            self = self.handle_ttl(ttl);
        }
        if let Some(exposition) = args.exposition {
            self = self.exposition(exposition.into());
        }
        if !args.allowed_hosts.is_empty() {
            self = self.allowed_hosts(args.allowed_hosts);
        }
        if !args.allowed_origins.is_empty() {
            self = self.allowed_origins(args.allowed_origins);
        }
        for delay in args.delays {
            self = self.delay(delay);
        }
        if let Some(ttl) = args.task_ttl {
            self = self.task_ttl(ttl);
        }
        if let Some(per_principal) = args.max_tasks {
            self = self.max_tasks(crate::server::DEFAULT_TASKS_PER_SERVER.max(per_principal), per_principal);
        }
        if let Some(bytes) = args.max_context_bytes {
            self = self.max_context_bytes(bytes);
        }
        if let Some(max) = args.max_sessions {
            self = self.max_sessions(max);
        }
        if args.max_listen_streams.is_some() || args.max_client_streams.is_some() {
            let total = args.max_listen_streams.unwrap_or(super::super::DEFAULT_MAX_LISTEN_STREAMS);
            let per_client = args.max_client_streams.unwrap_or(super::super::DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT);
            self = self.max_listen_streams(total, per_client);
        }
        if let Some(timeout) = args.request_read_timeout {
            self = self.request_read_timeout(timeout);
        }
        if let Some(delay) = args.drain_delay {
            self = self.drain_delay(delay);
        }
        if let Some(grace) = args.shutdown_grace {
            self = self.shutdown_grace(grace);
        }
        if let Some(max) = args.max_client_connections {
            self = self.max_connections_per_client(max);
        }
        if let Some(max) = args.max_connections {
            self = self.max_connections(max);
        }
        if let Some(timeout) = args.session_idle_timeout {
            self = self.session_idle_timeout(timeout);
        }
        if let Some(limit) = args.client_rate_limit {
            self = self.client_rate_limit(limit.calls, Duration::from_millis(limit.per_ms));
        }
        self = self.with_callers(args.callers, &args.sources)?;
        if args.require_auth {
            self = self.require_authentication();
        }
        if let Some(jwt) = jwt {
            self = jwt(self);
        }
        if let Some(resource) = args.resource {
            if args.authorization_servers.is_empty() {
                return Err(usage("`--resource` needs at least one `--authorization-server URL`"));
            }
            self = self.protected_resource(resource, args.authorization_servers);
        }
        if let Some(page) = args.confirmation_page {
            self = self.confirmation_page(page);
        }
        if let Some(ttl) = args.challenge_ttl {
            self = self.challenge_ttl(ttl);
        }
        if let Some(timeout) = args.effect_timeout {
            self.effects.policy.attempt_timeout = timeout;
        }
        if let Some(attempts) = args.effect_attempts {
            self.effects.policy.max_attempts = attempts;
        }
        if let Some(cut_offs) = args.effect_cut_offs {
            self.effects.policy.max_cut_offs = cut_offs;
        }
        if let Some(path) = args.otp_outbox {
            tracing::warn!(path = %path.display(), "one-time codes go to a file (--otp-outbox): for development only");
            self = self.otp_sender(crate::confirm::OutboxSender::new(path));
        }
        if let Some(path) = &args.audit_log {
            let sink = crate::telemetry::JsonLinesSink::open(path)
                .map_err(|e| usage(format!("{}: {e}", args.sources.given("audit-log", path.display()))))?;
            self = self.audit_sink(sink);
        }
        let mut options = StoreOptions::default();
        if let Some(ttl) = args.lease_ttl {
            options = options.lease_ttl(ttl);
        }
        if let Some(ca) = args.redis_ca {
            options = options.redis_ca(ca);
        }
        if args.redis_volatile {
            options = options.redis_volatile();
        }
        self = self.store_from(args.store.as_deref(), &options, &args.sources).await?;
        // The addresses are taken before the build opens the store's file: a server that
        // cannot listen refuses to start without creating the file or locking it.
        let metrics_listener = match args.metrics {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
            None => None,
        };
        let console_listener = match args.console {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
            None => None,
        };
        let http_listener = match args.http {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
            None => None,
        };
        let state_file = self.store_file.clone();
        let server = self.build()?;
        let say = |line: String| announce(args.log_format.unwrap_or_default(), &line);
        if let Some(path) = state_file {
            say(format!("state in {}", path.display()));
        }
        if let Some(listener) = metrics_listener {
            let metrics =
                crate::telemetry::PrometheusMetrics::install().map_err(|e| usage(format!("`--metrics`: {e}")))?;
            say(format!("metrics at http://{}/metrics", listener.local_addr()?));
            let server = server.clone();
            tokio::spawn(async move {
                if let Err(error) = server.serve_metrics(listener, &metrics).await {
                    tracing::error!(%error, "the metrics endpoint stopped");
                }
            });
        }
        if let Some(listener) = console_listener {
            if server.authenticator().is_none() {
                return Err(usage("`--console` needs operators: give tokens (`--token`, `--tokens`) or a JWT issuer"));
            }
            say(format!("the operator's console at http://{}/", listener.local_addr()?));
            let server = server.clone();
            tokio::spawn(async move {
                if let Some(Err(error)) = server.serve_console(listener).await {
                    tracing::error!(%error, "the console stopped");
                }
            });
        }
        match http_listener {
            Some(listener) => {
                // The one line a person starting the server reads (tests read it too).
                let mode = if args.stateless { " (sessionless)" } else { "" };
                say(format!("serving Streamable HTTP at http://{}/mcp{mode}", listener.local_addr()?));
                server.serve_http(listener).await
            }
            None => {
                server.serve_stdio().await?;
                // Stopped (its input closed, or a signal): the read of stdin, on a thread
                // of its own, cannot be cancelled, and would hold the runtime's shutdown
                // until more input came.
                std::process::exit(0)
            }
        }
    }

    /// The store the command line (or `TOOLGATE_STORE`) names ([`ServerBuilder::store_url`]);
    /// without one, the store the builder was given, else the file `./<server name>.db`.
    async fn store_from(
        self,
        spec: Option<&str>,
        options: &StoreOptions,
        sources: &Sources,
    ) -> Result<Self, ServeError> {
        match spec {
            Some(url) => self.store_url(url, options).await.map_err(|error| store_error(url, error, sources)),
            None if self.store.is_some() || self.store_file.is_some() => Ok(self),
            None => {
                let path = format!("./{}.db", self.name);
                Ok(self.store_file(path))
            }
        }
    }
}

/// Why `--store URL` cannot be used, as the command line (or its variable) says it: a URL
/// of no scheme, or of a store this build lacks, or a `--redis-ca` that cannot be read, is
/// a usage error; a store that cannot be reached is not.
fn store_error(url: &str, error: OpenStoreError, sources: &Sources) -> ServeError {
    let store = |url: &str| sources.given("store", url);
    match error {
        OpenStoreError::UnknownScheme(_) => usage(format!("{}: {error}", store(url))),
        OpenStoreError::NotBuilt(_) => usage(format!("{}: {error}", store(&redacted(url)))),
        OpenStoreError::CertificateAuthorities { path, problem } => {
            usage(format!("{}: {problem}", sources.given("redis-ca", path.display())))
        }
        other => ServeError::Store(format!("{}: {other}", store(&redacted(url)))),
    }
}

/// `url` as a message may show it: a password it carries is replaced by `***`.
pub(super) fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(_) => url.to_string(),
        Err(_) => "(an unreadable URL)".to_string(),
    }
}

impl ServerBuilder {
    /// Who may call, as the options (or their variables) say: the `--token`s (else
    /// `TOOLGATE_TOKENS`), the `--tokens` file, the `--stdio-principal`. `serve` and
    /// `audit` read them alike.
    pub(super) fn with_callers(mut self, callers: CallerArgs, sources: &Sources) -> Result<Self, ServeError> {
        let tokens = callers.tokens;
        // One secret stands for one principal: given twice, the later would silently win.
        let mut given: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let mut once = |secret: &str, source: String| match given.insert(secret.to_string(), source.clone()) {
            Some(first) => Err(usage(format!(
                "the same token secret is given twice: {first} and {source}; give each principal its own"
            ))),
            None => Ok(()),
        };
        for Token { principal, secret } in &tokens {
            once(secret, format!("the {} of `{principal}`", sources.named("token")))?;
        }
        let file = match &callers.tokens_file {
            Some(path) => {
                let shown = sources.given("tokens", path.display());
                let entries = tokens_file(path, &shown)?;
                for (n, entry) in entries.iter().enumerate() {
                    once(&entry.secret, format!("{shown} entry {} (`{}`)", n + 1, entry.principal))?;
                }
                Some(entries)
            }
            None => None,
        };
        for Token { principal, secret } in tokens {
            self = self.token_with_every_scope(principal, secret);
        }
        if let Some(entries) = file {
            let mut tokens = crate::auth::StaticTokens::new();
            for entry in entries {
                let mut principal = crate::auth::Principal::new(entry.principal).with_scopes(entry.scopes);
                if let Some(tenant) = entry.tenant {
                    principal = principal.with_tenant(tenant);
                }
                tokens = tokens.token(entry.secret, principal);
            }
            self = self.authenticator(tokens);
        }
        if let Some(name) = callers.stdio_principal {
            self = self.stdio_principal_with_every_scope(name);
        }
        Ok(self)
    }
}

/// How the `--jwt-*` flags configure the server, if they are given.
type Configure = Box<dyn FnOnce(ServerBuilder) -> ServerBuilder + Send>;

fn jwt_authenticator(args: &ServeArgs) -> Result<Option<Configure>, ServeError> {
    let given = args.jwt_issuer.is_some()
        || args.jwt_audience.is_some()
        || args.jwks_url.is_some()
        || args.jwt_secret_env.is_some()
        || args.jwt_secret_file.is_some();
    if !given {
        return Ok(None);
    }
    let (Some(issuer), Some(audience)) = (args.jwt_issuer.clone(), args.jwt_audience.clone()) else {
        return Err(usage("JWTs need both `--jwt-issuer` and `--jwt-audience`"));
    };
    #[cfg(feature = "jwt")]
    {
        use crate::auth::JwtAuthenticator;
        let jwt = match (&args.jwks_url, &args.jwt_secret_env, &args.jwt_secret_file) {
            (Some(url), None, None) => JwtAuthenticator::jwks(issuer, audience, url.clone()),
            (None, Some(variable), None) => {
                let shown = args.sources.given("jwt-secret-env", variable);
                let secret = std::env::var(variable).map_err(|_| usage(format!("{shown}: the variable is not set")))?;
                JwtAuthenticator::hs256(issuer, audience, secret.as_bytes())
                    .map_err(|e| usage(format!("{shown}: {e}")))?
            }
            (None, None, Some(path)) => {
                let shown = args.sources.given("jwt-secret-file", path.display());
                let secret = super::secrets::read_secret(path).map_err(|e| usage(format!("{shown}: {e}")))?;
                JwtAuthenticator::hs256(issuer, audience, &secret).map_err(|e| usage(format!("{shown}: {e}")))?
            }
            _ => {
                return Err(usage(
                    "JWTs need exactly one of `--jwks-url URL`, `--jwt-secret-env VAR` and `--jwt-secret-file PATH`",
                ));
            }
        };
        Ok(Some(Box::new(move |builder: ServerBuilder| builder.authenticator(jwt))))
    }
    #[cfg(not(feature = "jwt"))]
    {
        let _ = (issuer, audience);
        Err(usage("this server was built without JWT support (toolgate's `jwt` feature)"))
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

/// The entries of the `--tokens` file at `path` (`shown` as the user named it), each
/// checked. Its errors never quote a secret.
fn tokens_file(path: &std::path::Path, shown: &str) -> Result<Vec<TokenEntry>, ServeError> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("{shown}: {e}")))?;
    let file: TokensFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| text[..span.start].lines().count().max(1));
        let at = line.map(|line| format!(" (line {line})")).unwrap_or_default();
        usage(format!("{shown}: not a tokens file{at}: each `[[token]]` has `secret`, `principal`, and optionally `tenant` and `scopes`"))
    })?;
    for entry in &file.token {
        if entry.secret.len() < 16 {
            return Err(usage(format!("{shown}: the token of `{}` is shorter than 16 characters", entry.principal)));
        }
        // An empty tenant would be served as no tenant, sharing the default tenant's
        // instances: leave `tenant` out for that, or name one.
        if entry.tenant.as_deref().is_some_and(|tenant| tenant.trim().is_empty()) {
            return Err(usage(format!(
                "{shown}: the `tenant` of `{}` is empty; name a tenant, or leave `tenant` out",
                entry.principal
            )));
        }
    }
    Ok(file.token)
}

/// One of the lines a person starting the server reads (where it serves, where its state
/// is), on stderr whatever `RUST_LOG` says: `toolgate: …`, or with `--log-format json` an
/// object like the log's others (`target` `toolgate`, its text the `message`).
fn announce(format: super::args::LogFormat, line: &str) {
    match format {
        super::args::LogFormat::Text => eprintln!("toolgate: {line}"),
        super::args::LogFormat::Json => {
            let object = serde_json::json!({
                "timestamp": crate::store::rfc3339(crate::store::now_ms()),
                "level": "INFO",
                "fields": { "message": line },
                "target": "toolgate",
            });
            eprintln!("{object}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_shown_without_its_password() {
        assert_eq!(redacted("rediss://:hunter2@cache.internal:6380/0"), "rediss://:***@cache.internal:6380/0");
        assert_eq!(redacted("redis://app:hunter2@10.0.0.5/1"), "redis://app:***@10.0.0.5/1");
        assert_eq!(redacted("redis://127.0.0.1:6379/0"), "redis://127.0.0.1:6379/0");
        assert!(!redacted("redis://:hunter2@[bad").contains("hunter2"));
    }

    #[test]
    fn a_later_usage_error_ends_with_the_usage_line() {
        let error =
            usage("`--store nowhere`: a store is `sqlite:PATH`, `redis://HOST:PORT/DB`, `postgres://USER@HOST:PORT/DB` or `memory`").to_string();
        assert!(error.starts_with("`--store nowhere`: a store is"), "{error}");
        assert!(error.contains("\n\nUsage: ") && error.contains("--help"), "{error}");
    }

    /// What `--store` answered before the table of schemes moved to `store::open`, word
    /// for word (the usage line after it aside).
    async fn refused(url: &str, options: &StoreOptions) -> String {
        let error = match crate::server::Server::from_registry("t").store_url(url, options).await {
            Err(error) => store_error(url, error, &Sources::default()),
            Ok(_) => panic!("`{url}` opened"),
        };
        let text = error.to_string();
        text.split("\n\nUsage: ").next().unwrap().trim_end().to_string()
    }

    #[tokio::test]
    async fn store_urls_are_refused_as_before() {
        let none = StoreOptions::default();
        let known = "a store is `sqlite:PATH`, `redis://HOST:PORT/DB`, `postgres://USER@HOST:PORT/DB` or `memory`";
        for url in ["nowhere", "sqlite:", "mysql://a:hunter2@db/x"] {
            // The URL as given: it names no store.
            assert!(refused(url, &none).await.ends_with(&format!("`--store {url}`: {known}")), "{url}");
        }
        #[cfg(not(feature = "postgres"))]
        assert!(refused("postgres://app:hunter2@db/x", &none).await.ends_with(
            "`--store postgres://app:***@db/x`: this server was built without Postgres (toolgate's `postgres` feature)"
        ));
        #[cfg(not(feature = "redis"))]
        assert!(refused("redis://:hunter2@cache/0", &none).await.ends_with(
            "`--store redis://:***@cache/0`: this server was built without Redis (toolgate's `redis` feature)"
        ));
        #[cfg(all(feature = "redis", not(feature = "redis-tls")))]
        assert!(refused("rediss://cache/0", &none).await.ends_with(
            "`--store rediss://cache/0`: this server was built without Redis over TLS (toolgate's `redis-tls` feature)"
        ));
        #[cfg(feature = "redis-tls")]
        {
            let missing = StoreOptions::default().redis_ca("/nonexistent/ca.pem");
            let refused = refused("rediss://127.0.0.1:1/0", &missing).await;
            assert!(refused.contains("`--redis-ca /nonexistent/ca.pem`: No such file or directory"), "{refused}");
        }
    }
}

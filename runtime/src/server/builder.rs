//! [`ServerBuilder`]: everything a server is configured with, checked once in
//! [`ServerBuilder::build`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Implementation;

use super::catalog::Catalog;
use super::front::options::HttpOptions;
use super::{AuthOptions, Server, Shared};
use crate::action::States;
use crate::auth::metadata::ProtectedResource;
use crate::auth::{Authenticator, Principal, Roster, StaticTokens};
use crate::confirm::{Channel, Confirmations, OtpSender, TotpSecrets};
use crate::domain::DomainPolicy;
use crate::engine::{Engine, Limits};
use crate::flow::handle::{HANDLE_KEY_ENV, HANDLE_KEYS_ENV};
use crate::flow::{DEFAULT_HANDLE_TTL, Flows, HandleSigner, WeakKey};
use crate::fsm::Machine;
use crate::gate::Limiter;
use crate::prompt::Prompt;
use crate::registry::ToolKind;
use crate::registry::{Registry, RegistryOptions, StartupError, StartupProblem};
use crate::resource::{Resource, ResourceTemplate};
use crate::store::{FlowStore, HistoryRetention, MemoryStore};

/// Configures a [`Server`]; finish with [`ServerBuilder::build`] or
/// [`ServerBuilder::run_cli`].
#[must_use = "a builder does nothing until built"]
pub struct ServerBuilder {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) instructions: Option<String>,
    pub(super) options: RegistryOptions,
    pub(super) store: Option<Arc<dyn FlowStore>>,
    /// A SQLite file to open once the registry is known to be valid.
    pub(super) store_file: Option<std::path::PathBuf>,
    pub(super) handle_keys: Vec<Vec<u8>>,
    pub(super) handle_ttl: Duration,
    pub(super) limits: Limits,
    pub(super) sessionless: bool,
    pub(super) http: HttpOptions,
    pub(super) states: States,
    pub(super) auth: AuthOptions,
    pub(super) confirmations: Confirmations,
    pub(super) catalog: Catalog,
    pub(super) audit_sinks: Vec<Arc<dyn crate::telemetry::AuditSink>>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ServerBuilder {
    pub(super) fn new(name: String) -> Self {
        Self {
            name,
            version: "0.0.0".into(),
            instructions: None,
            options: RegistryOptions::default(),
            store: None,
            store_file: None,
            handle_keys: Vec::new(),
            handle_ttl: DEFAULT_HANDLE_TTL,
            limits: Limits::default(),
            sessionless: false,
            http: HttpOptions::default(),
            states: States::default(),
            auth: AuthOptions::default(),
            confirmations: Confirmations::default(),
            catalog: Catalog::default(),
            audit_sinks: Vec::new(),
        }
    }

    /// The version reported in `serverInfo`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The `instructions` sent to clients at initialization.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a machine loaded at start-up (see [`Machine::from_xstate_json`]); actions
    /// bound to it use `#[action(machine = "…", startup_checked)]`.
    pub fn machine(mut self, machine: Machine) -> Self {
        self.options.machines.push(machine);
        self
    }

    /// Gives the function of a guard that machines loaded with [`ServerBuilder::machine`]
    /// name (`"guard": "within_captured"` in XState JSON). A `machine!` names its guards'
    /// functions itself; a loaded machine naming a guard the server was not given does not
    /// start.
    pub fn guard(mut self, guard: crate::Guard) -> Self {
        self.options.guards.retain(|g| g.name() != guard.name());
        self.options.guards.push(guard);
        self
    }

    /// How long `state` of `machine` lasts before time moves it (its first `after`), in
    /// place of what the machine declares: a test's two seconds for a quote valid fifteen
    /// minutes (`--after quote.quoted=2s`). A state without `after` stops start-up.
    pub fn after(self, machine: &str, state: &str, lasts: Duration) -> Self {
        let after_ms = lasts.as_millis().clamp(1, u128::from(u64::MAX)) as u64;
        self.delay(crate::registry::DelayOverride { machine: Some(machine.into()), state: state.into(), after_ms })
    }

    pub(crate) fn delay(mut self, delay: crate::registry::DelayOverride) -> Self {
        self.options.delays.push(delay);
        self
    }

    /// How the intent lock applies (default [`DomainPolicy::LockOnFirstUse`]).
    pub fn domain_policy(mut self, policy: DomainPolicy) -> Self {
        self.options.policy = policy;
        self
    }

    /// Lists only the active domain's tools (plus global ones, such as `switch_domain`)
    /// in each session's `tools/list`; `switch_domain` then notifies `list_changed`.
    /// Calls are checked against the active domain either way.
    pub fn list_active_domain_only(mut self) -> Self {
        self.options.list_active_only = true;
        self
    }

    /// How tools are shown to a model: a tool per action ([`Exposition::Flat`], the
    /// default), or per domain ([`Exposition::Grouped`]: `invoice` with an `action`
    /// argument, each action judged exactly as its flat tool).
    ///
    /// [`Exposition::Flat`]: crate::Exposition::Flat
    /// [`Exposition::Grouped`]: crate::Exposition::Grouped
    pub fn exposition(mut self, exposition: crate::Exposition) -> Self {
        self.options.exposition = exposition;
        self
    }

    /// A one-line description of `domain`, listed in `switch_domain`'s description.
    pub fn describe_domain(mut self, domain: impl Into<String>, description: impl Into<String>) -> Self {
        self.options.domain_descriptions.insert(domain.into(), description.into());
        self
    }

    /// Gives the keys of keyed machine `machine` one canonical spelling: `spelling`
    /// receives the key a call names (after the key field's own schema — its `pattern`,
    /// say — accepted it) and returns the key's one spelling for that object, or a problem
    /// to report as `INVALID_ARGUMENT` on the key field. The handler receives the
    /// canonical spelling too.
    ///
    /// An instance is named by its key's text: if `INV-1` and `inv-1` (or `INV-01`) are
    /// one invoice to your handlers but two keys to the server, they are two instances
    /// with two states, and an invoice paid as one can be paid again as the other. Either
    /// constrain the key field so each object has one accepted spelling (a `pattern`),
    /// or canonicalize it here.
    ///
    /// ```
    /// # use toolgate_runtime::Server;
    /// let builder = Server::from_registry("invoices").canonical_key("invoice", |id| {
    ///     let id = id.trim().to_ascii_uppercase();
    ///     let digits = id.strip_prefix("INV-").ok_or("must start with `INV-`")?;
    ///     let number: u64 = digits.parse().map_err(|_| format!("`{digits}` is not a number"))?;
    ///     Ok(format!("INV-{number}"))
    /// });
    /// ```
    pub fn canonical_key<F>(mut self, machine: impl Into<String>, spelling: F) -> Self
    where
        F: Fn(&str) -> Result<String, std::borrow::Cow<'static, str>> + Send + Sync + 'static,
    {
        let spelling = move |key: &str| spelling(key).map_err(std::borrow::Cow::into_owned);
        self.options.canonical_keys.0.insert(machine.into(), Arc::new(spelling));
        self
    }

    /// Lets keyed tools' key arguments travel as HTTP headers too (SEP-2243, MCP
    /// 2026-07-28): the key property is annotated `x-mcp-header` (`payment_id` travels as
    /// `Mcp-Param-Payment-Id`), so a gateway or load balancer can route a call by the
    /// object it governs without reading the body. A 2026-07-28 request must then carry
    /// the header, equal to the body's value (400 with `-32020` otherwise). Off by default:
    /// a client that does not send the headers would be refused.
    pub fn key_headers(mut self) -> Self {
        self.options.key_headers = true;
        self
    }

    /// Keeps flows in `store` instead of the default [`MemoryStore`].
    pub fn store(mut self, store: impl FlowStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The key that signs state handles (at least 32 bytes). Without one, the server
    /// reads `TOOLGATE_HANDLE_KEY`; without that, it makes a random key for this process
    /// only and warns: replicas, or a restart, then refuse each other's handles.
    pub fn handle_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.handle_keys = vec![key.into()];
        self
    }

    /// The keys of state handles, for rotation: the first signs, every one verifies. To
    /// rotate, put the new key first and drop the old one after one
    /// [`handle_ttl`](Self::handle_ttl), when no handle it signed is still alive. Without
    /// keys the server reads `TOOLGATE_HANDLE_KEYS` (comma-separated), then
    /// `TOOLGATE_HANDLE_KEY`.
    pub fn handle_keys(mut self, keys: impl IntoIterator<Item = impl Into<Vec<u8>>>) -> Self {
        self.handle_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// How long a state handle and its flow live after their last use (default 1 hour).
    pub fn handle_ttl(mut self, ttl: Duration) -> Self {
        self.handle_ttl = ttl;
        self
    }

    /// The argument that carries the state handle (default `flow`).
    pub fn handle_argument(mut self, name: impl Into<String>) -> Self {
        self.options.handle_argument = name.into();
        self
    }

    /// How long a transitioning call waits for an instance or flow another call is
    /// changing, before it gets `FLOW_BUSY` (default 5 s).
    pub fn lease_wait(mut self, wait: Duration) -> Self {
        self.limits.lease_wait = wait;
        self
    }

    /// The deadline of handlers whose action sets none (`#[action(timeout = "…")]`);
    /// past it the call gets `TIMEOUT` and commits nothing (default 30 s).
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.limits.handler_timeout = timeout;
        self
    }

    /// The most one instance's context may hold, serialized as JSON (default 64 KiB,
    /// [`DEFAULT_MAX_CONTEXT_BYTES`](crate::DEFAULT_MAX_CONTEXT_BYTES)): a handler that sets
    /// a larger one gets `CONTEXT_TOO_LARGE` from [`InstanceMut::set`](crate::InstanceMut::set).
    pub fn max_context_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_context_bytes = bytes;
        self
    }

    /// The most tokens one tool may cost a model's context — its name, description and
    /// input schema, counted with `o200k_base` — before the audit's `context_budget` rule
    /// fails it (default 800,
    /// [`DEFAULT_CONTEXT_BUDGET`](crate::inspect::DEFAULT_CONTEXT_BUDGET); `describe
    /// --format cost` shows each tool's count).
    pub fn context_budget(mut self, tokens: usize) -> Self {
        self.options.context_budget = tokens;
        self
    }

    /// How long an MCP task and its result are kept from its creation (its `ttlMs`,
    /// default 15 minutes, [`DEFAULT_TASK_TTL`](crate::server::DEFAULT_TASK_TTL)); a
    /// task's call runs at most this long unless its action sets a deadline. Expired
    /// tasks are swept with the store's other expired records.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.limits.tasks.ttl = ttl;
        self
    }

    /// How many MCP tasks may run at once in this process: `per_principal` for one
    /// principal (default 16) and `total` in all (default 256). A call past either is
    /// refused with `RATE_LIMITED` and never becomes a task.
    pub fn max_tasks(mut self, total: usize, per_principal: usize) -> Self {
        self.limits.tasks.per_server = total.max(1);
        self.limits.tasks.per_principal = per_principal.max(1);
        self
    }

    /// Serves Streamable HTTP without sessions (MCP 2026-07-28): every request stands
    /// alone, `tools/list` is the same for everyone, and conversations are named by state
    /// handles. The default, stateful server serves sessionless requests too.
    pub fn sessionless(mut self) -> Self {
        self.sessionless = true;
        self
    }

    /// Gives handlers the application state `value` (a database pool, an HTTP client,
    /// configuration): a handler parameter `State<T>` receives a clone of it. Call it once
    /// per type; a handler asking for a type the server was not given stops the server
    /// at start-up, naming the handler and the type.
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(value);
        self
    }

    /// The `Host` names (or `host:port`s) Streamable HTTP answers; loopback by default
    /// (DNS-rebinding protection). A public deployment lists its own names.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The browser `Origin`s Streamable HTTP accepts (`https://app.example.com:443`,
    /// `http://localhost:*`); pages from loopback by default. A request whose `Origin` is
    /// not listed gets 403; requests without `Origin` (non-browser clients) pass.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// How many Streamable HTTP sessions may live at once (default 1,000); a request that
    /// would open another gets 503 with `Retry-After`, while live sessions keep working.
    /// Every session counts, whatever the request that opened it said in its headers.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.http.max_sessions = max;
        self
    }

    /// How long a session may stay idle before the server closes it (default 5 minutes).
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.http.session_idle_timeout = timeout;
        self
    }

    /// The largest request body Streamable HTTP accepts (default 4 MiB); a larger one gets
    /// 413 with a JSON-RPC error.
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.http.max_request_body_bytes = bytes;
        self
    }

    /// How many `subscriptions/listen` streams (MCP 2026-07-28) may be open at once: `total`
    /// on the server (default 1,000) and `per_client` for one client (default 16), a client
    /// being its principal, or its peer address when it sends no token. A stream past
    /// either gets 503 with `Retry-After`.
    pub fn max_listen_streams(mut self, total: usize, per_client: usize) -> Self {
        self.http.max_listen_streams = total;
        self.http.max_listen_streams_per_client = per_client;
        self
    }

    /// How long a request's headers, and then its body, have to arrive (default 10
    /// seconds). A connection whose headers do not arrive in time is closed (also one
    /// idling between requests); a body that does not gets 408 with a JSON-RPC error.
    pub fn request_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.request_read_timeout = timeout;
        self
    }

    /// How many connections one peer address may hold open at once (default 256); a
    /// further one is closed as soon as it is accepted. Applies to [`Server::serve_http`].
    /// Behind a reverse proxy every connection comes from the proxy: raise it, and bound
    /// clients there.
    pub fn max_connections_per_client(mut self, max: usize) -> Self {
        self.http.max_connections_per_client = max;
        self
    }

    /// A server-wide limit on the HTTP requests one client (one peer IP address) may send:
    /// at most `calls` in any window of `per`. Past it the request gets HTTP 429 with
    /// `Retry-After` before anything else runs. Off by default; the per-tool limits of
    /// `#[action(rate_limit = …)]` apply either way. Behind a reverse proxy every request
    /// comes from the proxy's address: limit there instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use toolgate_runtime::Server;
    /// let builder = Server::from_registry("books").client_rate_limit(600, Duration::from_secs(60));
    /// ```
    pub fn client_rate_limit(mut self, calls: u32, per: Duration) -> Self {
        let per_ms = u64::try_from(per.as_millis()).unwrap_or(u64::MAX).max(1);
        self.http.client_rate_limit =
            Some(crate::action::RateLimit { calls: calls.max(1), per_ms, per: crate::action::RatePer::Client });
        self
    }

    /// Resolves the `Authorization: Bearer …` token of every Streamable HTTP request to a
    /// [`Principal`] (a request whose token it refuses gets 401 with `WWW-Authenticate`).
    /// Tools that are `transactional`, require a `scope` or take a `Principal` refuse
    /// callers without one; tools requiring a scope are listed only to principals holding
    /// it.
    ///
    /// ```
    /// # use toolgate_runtime::{Principal, Server, StaticTokens};
    /// let tokens = StaticTokens::new().token("s3cret", Principal::new("clerk").with_scopes(["payments:capture"]));
    /// let builder = Server::from_registry("payments").authenticator(tokens).require_authentication();
    /// ```
    ///
    /// Given more than one (a tokens file and a JWT issuer, say), they are tried in the
    /// order given: a token one refuses as invalid goes to the next.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        let next: Arc<dyn Authenticator> = Arc::new(authenticator);
        self.auth.authenticator = Some(match self.auth.authenticator.take() {
            Some(first) => Arc::new(crate::auth::FirstOf(first, next)),
            None => next,
        });
        self
    }

    /// Declares this server an OAuth 2.0 protected resource (RFC 9728), as the MCP
    /// authorization specification asks of servers that take tokens from an authorization
    /// server: `resource` is the MCP endpoint's absolute URL (tokens name it as their
    /// audience), `authorization_servers` the issuers. [`Server::serve_http`] then serves
    /// the metadata at `/.well-known/oauth-protected-resource/mcp` (see
    /// [`Server::well_known_router`] for your own router), and every 401's
    /// `WWW-Authenticate` names it in `resource_metadata`.
    pub fn protected_resource(
        mut self,
        resource: impl Into<String>,
        authorization_servers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let servers = authorization_servers.into_iter().map(Into::into).collect();
        self.auth.protected_resource = Some((resource.into(), servers));
        self
    }

    /// Refuses every Streamable HTTP request without credentials with 401 and a
    /// `WWW-Authenticate: Bearer` challenge, as the MCP authorization specification asks,
    /// instead of serving it anonymously. Needs an [`authenticator`](Self::authenticator).
    pub fn require_authentication(mut self) -> Self {
        self.auth.required = true;
        self
    }

    /// Who a stdio connection (or one from [`Server::connection`]) is: stdio carries no
    /// credentials, so the deployment says.
    pub fn stdio_principal(mut self, principal: Principal) -> Self {
        self.auth.stdio_principal = Some(principal);
        self
    }

    /// A bearer token standing for the principal `subject`, in no tenant, with every scope
    /// the server's tools declare: for development and tests (`--token clerk=s3cret` on
    /// the command line). Combined with an [`authenticator`](Self::authenticator), these
    /// tokens are tried first.
    pub fn token_with_every_scope(mut self, subject: impl Into<String>, secret: impl Into<String>) -> Self {
        self.auth.every_scope_tokens.push((subject.into(), secret.into()));
        self
    }

    /// Delivers the one-time codes of `confirm`ed tools ([`OutboxSender`](crate::confirm::OutboxSender)
    /// for development, a [`WebhookSender`](crate::confirm) or your own [`OtpSender`]). A
    /// server with a confirmed tool and no channel does not start.
    pub fn otp_sender(mut self, sender: impl OtpSender) -> Self {
        self.confirmations.channel = Some(Channel::Sender(Arc::new(sender)));
        self
    }

    /// Offers the one-time codes of `confirm`ed tools on a confirmation page to clients that
    /// take URL-mode elicitation (MCP 2025-11-25 sessions and stdio): the client shows the
    /// person `url` (this server's `/confirm`, as the person's browser reaches it, e.g.
    /// `https://mcp.example.com/confirm`) with the code in its fragment, never through the
    /// model. Other clients get the code by the configured channel ([`otp_sender`](Self::otp_sender),
    /// [`totp`](Self::totp)). [`Server::serve_http`] serves the page at `/confirm`.
    pub fn confirmation_page(mut self, url: impl Into<String>) -> Self {
        self.confirmations.page = Some(url.into());
        self
    }

    /// Confirms `confirm`ed tools with the TOTP code of each principal's authenticator app
    /// instead of a delivered code.
    pub fn totp(mut self, secrets: TotpSecrets) -> Self {
        self.confirmations.channel = Some(Channel::Totp(secrets));
        self
    }

    /// How long a confirmation challenge lives (default 5 minutes).
    pub fn challenge_ttl(mut self, ttl: Duration) -> Self {
        self.confirmations.ttl = ttl;
        self
    }

    /// How long a confirmation challenge lives (default 5 minutes), how many wrong codes it
    /// takes (default 5), and how long confirmations of a tool stay locked for a principal
    /// after that (default 15 minutes).
    pub fn confirmation_limits(mut self, ttl: Duration, max_attempts: u32, lock: Duration) -> Self {
        self.confirmations.ttl = ttl;
        self.confirmations.max_attempts = max_attempts.max(1);
        self.confirmations.lock = lock;
        self
    }

    /// Who a stdio connection is: the principal `subject`, in no tenant, with every scope
    /// the server's tools declare (`--stdio-principal NAME`).
    pub fn stdio_principal_with_every_scope(mut self, subject: impl Into<String>) -> Self {
        self.auth.stdio_every_scope = Some(subject.into());
        self
    }

    /// Keeps the server's state in the SQLite file at `path` (created if missing; see
    /// [`SqliteStore`](crate::store::SqliteStore)), opened by [`build`](Self::build) once the
    /// registry is valid. What a server started from the command line does by default,
    /// with `./<server name>.db`.
    pub fn store_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.store = None;
        self.store_file = Some(path.into());
        self
    }

    /// Records every committed transition in `sink` as well (after its commit): a
    /// [`JsonLinesSink`](crate::telemetry::JsonLinesSink) file (`--audit-log PATH`), or
    /// your own. Call once per sink.
    pub fn audit_sink(mut self, sink: impl crate::telemetry::AuditSink) -> Self {
        self.audit_sinks.push(Arc::new(sink));
        self
    }

    /// Offers `resource` (`resources/list`, `resources/read`).
    pub fn resource(mut self, resource: Resource) -> Self {
        self.catalog.resources.get_mut().unwrap_or_else(|p| p.into_inner()).push(Arc::new(resource));
        self
    }

    /// Offers the resources of `template` (`resources/templates/list`, `resources/read`,
    /// completions of its variables).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.catalog.templates.push(template);
        self
    }

    /// Offers `prompt` (`prompts/list`, `prompts/get`, completions of its arguments).
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.catalog.prompts.get_mut().unwrap_or_else(|p| p.into_inner()).push(prompt);
        self
    }

    /// How much of each keyed instance's history the store keeps (default: the last
    /// [`HistoryRetention::DEFAULT_ENTRIES`] transitions), enforced as each transition is
    /// committed: `HistoryRetention::last(20)`, `HistoryRetention::within(30 days)`, or
    /// both. `last(0)` keeps none.
    pub fn history_retention(mut self, retention: HistoryRetention) -> Self {
        self.options.history.retention = retention;
        self
    }

    /// Offers the history tool of the keyed machine `machine`: `<machine>_history` (in a
    /// domain of another name, `<domain>_<machine>_history`), taking the machine's key as
    /// its tools do, and answering with the instance's transitions, oldest first, each
    /// with a one-line summary a model can quote — so it can say why a tool is refused
    /// instead of guessing. Read-only; a principal sees it when it may see at least one
    /// tool of the machine; another tenant gets an empty history. A store that keeps no
    /// history cannot serve it: such a server does not start.
    pub fn history_tool(mut self, machine: impl Into<String>) -> Self {
        self.options.history.machines.push(machine.into());
        self
    }

    /// Keeps, in each history entry of the keyed machine `machine`, the instance's data
    /// (its `context`) as the transition committed it. By default an entry says only that
    /// the data changed (`context_changed`): the data may be what the history's readers
    /// should not see, and it makes each entry as large as the data.
    pub fn history_with_data(mut self, machine: impl Into<String>) -> Self {
        self.options.history.with_data.push(machine.into());
        self
    }

    /// The checked registry alone, without a store or anything else a running server
    /// needs: what `describe`, `export` and `audit` read.
    pub(super) fn into_registry(self) -> Result<Registry, StartupError> {
        Registry::collect(self.options, &self.states)
    }

    /// Every tool graded against the routing checklist, its scopes against the principals
    /// configured so far and those of `also`: what `audit` prints, without building the
    /// server (no store is opened, no confirmation channel needed).
    pub(super) fn into_audit(mut self, also: Roster) -> Result<crate::inspect::Audit, StartupError> {
        let auth = std::mem::take(&mut self.auth);
        let registry = self.into_registry()?;
        let declared: Vec<&str> = registry.declared_scopes().into_iter().collect();
        Ok(crate::inspect::audit(&registry, &auth.roster(&declared).and(also)))
    }

    /// Collects and checks the registry; every problem is reported at once.
    pub fn build(self) -> Result<Server, StartupError> {
        let mut problems = Vec::new();
        let handle_argument = self.options.handle_argument.clone();
        let registry = Registry::collect(self.options, &self.states).map_err(|e| problems.extend(e.problems)).ok();
        // Warn about a per-process key only where handles can be minted.
        let uses_handles = registry.as_ref().is_some_and(Registry::uses_flows);
        let has_handle_key = !self.handle_keys.is_empty()
            || std::env::var_os(HANDLE_KEYS_ENV).is_some()
            || std::env::var_os(HANDLE_KEY_ENV).is_some();
        let handles = handle_signer(self.handle_keys, self.handle_ttl, uses_handles)
            .map_err(|weak| problems.push(StartupProblem::HandleKey { problem: weak.to_string() }))
            .ok();
        if let Some(registry) = &registry {
            problems.extend(check_catalog(&self.catalog, registry));
            problems.extend(confirmation_problems(registry, &self.confirmations));
        }
        // Every scope a tool, resource or prompt requires.
        let mut declared: Vec<String> =
            registry.iter().flat_map(Registry::declared_scopes).map(str::to_string).collect();
        declared.extend(self.catalog.scopes());
        declared.sort();
        declared.dedup();
        let mut auth = self.auth;
        if let Some(subject) = auth.stdio_every_scope.take() {
            auth.stdio_principal = Some(Principal::new(subject).with_scopes(declared.iter().cloned()));
        }
        if !auth.every_scope_tokens.is_empty() {
            let scopes = &declared;
            let tokens = auth.every_scope_tokens.drain(..).fold(StaticTokens::new(), |tokens, (subject, secret)| {
                tokens.token(secret, Principal::new(subject).with_scopes(scopes.iter().cloned()))
            });
            auth.authenticator = Some(match auth.authenticator.take() {
                Some(configured) => Arc::new(crate::auth::FirstOf(Arc::new(tokens), configured)),
                None => Arc::new(tokens),
            });
        }
        if auth.required && auth.authenticator.is_none() {
            problems.push(StartupProblem::Authentication {
                problem:
                    "authentication is required but no authenticator is configured: every request would be refused"
                        .into(),
            });
        }
        if let Some((resource, servers)) = auth.protected_resource.take() {
            auth.metadata = Some(ProtectedResource::new(resource, servers, declared.clone()));
        }
        // A store given as a value is judged with the rest. A file is created and locked
        // only once nothing else stops the start: a server that refuses to start leaves no
        // file behind and holds no lock another server would trip over.
        let mut store: Option<Arc<dyn FlowStore>> = match (self.store, &self.store_file) {
            (Some(store), _) => Some(store),
            (None, Some(_)) => None,
            (None, None) => Some(Arc::new(MemoryStore::new())),
        };
        if let Some(store) = &store {
            problems.extend(store_problems(store.as_ref(), registry.as_ref(), has_handle_key));
        }
        // Refused anyway: what can be told of the file without creating it is told too.
        if let (None, Some(path), false) = (&store, &self.store_file, problems.is_empty())
            && let Some(problem) = file_cannot_be_made(path)
        {
            problems.push(StartupProblem::Store { problem });
        }
        if let (None, Some(path), true) = (&store, &self.store_file, problems.is_empty()) {
            match crate::store::SqliteStore::open(path) {
                Ok(file) => {
                    tracing::info!(path = %file.path().display(), "state kept in a SQLite file");
                    let file: Arc<dyn FlowStore> = Arc::new(file);
                    problems.extend(store_problems(file.as_ref(), registry.as_ref(), has_handle_key));
                    store = Some(file);
                }
                Err(error) => problems.push(StartupProblem::Store { problem: error.to_string() }),
            }
        }
        let (Some(registry), Some(handles), Some(store), true) = (registry, handles, store, problems.is_empty()) else {
            return Err(StartupError { problems });
        };
        let limiters = registry
            .tools()
            .iter()
            .filter_map(|tool| match tool.kind {
                ToolKind::Action(registration) => registration.rate_limit.map(|limit| (tool.name, Limiter::new(limit))),
                ToolKind::SwitchDomain => None,
            })
            .collect();
        let server = Server {
            shared: Arc::new_cyclic(|this| Shared {
                this: this.clone(),
                engine: Arc::new_cyclic(|engine| Engine {
                    this: engine.clone(),
                    registry,
                    store,
                    flows: Flows::new(handles, handle_argument),
                    limits: self.limits,
                    states: self.states,
                    limiters,
                    confirmations: self.confirmations,
                    audit_sinks: self.audit_sinks,
                    timers: tokio::sync::broadcast::channel(1024).0,
                    running: Default::default(),
                }),
                implementation: Implementation::new(self.name, self.version),
                instructions: self.instructions,
                sessionless: self.sessionless,
                http: self.http,
                auth,
                watchers: Default::default(),
                listeners: Default::default(),
                catalog: self.catalog,
                sessions: Default::default(),
                by_session_id: Default::default(),
                resource_watchers: Default::default(),
            }),
        };
        server.follow_other_replicas();
        server.follow_timers();
        crate::engine::spawn_sweeper(Arc::downgrade(&server.shared.engine));
        Ok(server)
    }
}

/// Why the store file at `path` could not be made, as far as can be told without making
/// it: a folder to hold it that is missing or is no folder.
fn file_cannot_be_made(path: &std::path::Path) -> Option<String> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    match std::fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some(format!("the state file {}: {} is not a folder", path.display(), folder.display())),
        Err(error) => Some(format!("the state file {}: {}: {error}", path.display(), folder.display())),
    }
}

/// What a server with `confirmed` tools lacks to confirm them: a channel for the codes,
/// and amounts `confirm_above` can read.
fn confirmation_problems(registry: &Registry, confirmations: &Confirmations) -> Vec<StartupProblem> {
    let mut problems = Vec::new();
    let confirmed: Vec<&str> = registry.tools().iter().filter(|t| t.confirm().is_some()).map(|t| t.name).collect();
    if !confirmed.is_empty() && confirmations.channel.is_none() && confirmations.page.is_none() {
        problems.push(StartupProblem::Authentication {
            problem: format!(
                "{} must be confirmed with a one-time code and no channel is configured: give the server an OTP sender (ServerBuilder::otp_sender, `--otp-outbox PATH` for development) or TOTP secrets",
                confirmed.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    for tool in registry.tools() {
        if let Some(above) = tool.confirm().and_then(|policy| policy.above)
            && let Err(error) = crate::types::Money::parse(above.amount, above.currency)
        {
            problems.push(StartupProblem::Authentication {
                problem: format!("`{}`: `confirm_above` is not an amount of money: {error}", tool.name),
            });
        }
    }
    problems
}

/// What the store lacks for this server: histories its tools show, a handle key every
/// replica knows.
fn store_problems(store: &dyn FlowStore, registry: Option<&Registry>, has_handle_key: bool) -> Vec<StartupProblem> {
    let mut problems = Vec::new();
    let history_tools: Vec<&str> = registry.map(|r| r.history_tools().collect()).unwrap_or_default();
    if !history_tools.is_empty() && !store.keeps_history() {
        problems.push(StartupProblem::Store {
            problem: format!(
                "{} show instances' histories, and the store keeps none: give the server a store that keeps them (memory, SQLite, Redis)",
                history_tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    if store.is_shared() && !has_handle_key {
        problems.push(StartupProblem::HandleKey {
            problem: "a store shared by replicas needs a state-handle key every replica knows; a random one per process would make each replica refuse the others' handles".into(),
        });
    }
    problems
}

/// The handle signer: the configured keys, else `TOOLGATE_HANDLE_KEYS`, else
/// `TOOLGATE_HANDLE_KEY`, else a random key for this process alone, said loudly.
fn handle_signer(configured: Vec<Vec<u8>>, ttl: Duration, warn: bool) -> Result<HandleSigner, WeakKey> {
    let from_env = || {
        if let Some(keys) = std::env::var_os(HANDLE_KEYS_ENV) {
            let keys = keys.into_encoded_bytes();
            return Some(keys.split(|&b| b == b',').map(<[u8]>::to_vec).collect());
        }
        std::env::var_os(HANDLE_KEY_ENV).map(|key| vec![key.into_encoded_bytes()])
    };
    let keys = Some(configured).filter(|keys| !keys.is_empty()).or_else(from_env);
    match keys {
        Some(keys) => HandleSigner::with_keys(keys, ttl),
        None => {
            if warn {
                tracing::warn!(
                    "no state-handle key configured ({HANDLE_KEY_ENV} or ServerBuilder::handle_key): using a random key for this process only; handles will not survive a restart or work on another replica"
                );
            }
            Ok(HandleSigner::ephemeral(ttl))
        }
    }
}

/// What is wrong with the resources, templates and prompts: names given twice, templates
/// bound to machines that are not keyed, to variables they lack, or to states the machine
/// does not have.
fn check_catalog(catalog: &Catalog, registry: &Registry) -> Vec<StartupProblem> {
    let mut problems = Vec::new();
    let mut problem = |problem: String| problems.push(StartupProblem::Catalog { problem });
    let mut uris = HashSet::new();
    for resource in catalog.resources.read().unwrap_or_else(|p| p.into_inner()).iter() {
        if !uris.insert(resource.uri().to_string()) {
            problem(format!("resource `{}` is declared twice", resource.uri()));
        }
    }
    for template in &catalog.templates {
        let uri = &template.definition.uri_template;
        if !uris.insert(uri.clone()) {
            problem(format!("resource template `{uri}` is declared twice"));
        }
        for variable in template.completions.keys() {
            if !template.pattern.variables().any(|v| v == variable) {
                problem(format!("resource template `{uri}` completes `{variable}`, which it does not have"));
            }
        }
        let Some(instances) = &template.instances else { continue };
        let Some(machine) = registry.machines().find(|m| m.id() == instances.machine) else {
            problem(format!(
                "resource template `{uri}` is bound to machine `{}`, which no action uses",
                instances.machine
            ));
            continue;
        };
        if registry.instance_key_of(machine.id()).is_none() {
            problem(format!(
                "resource template `{uri}` is bound to the instances of `{}`, which is not a keyed machine (`key: \"…\"`)",
                machine.id()
            ));
        }
        if !template.pattern.variables().any(|v| v == instances.variable) {
            problem(format!(
                "resource template `{uri}` names the key by `{{{}}}`, which it does not have",
                instances.variable
            ));
        }
        for state in &instances.states {
            if !machine.has_state(state) {
                problem(format!(
                    "resource template `{uri}` is shown in state `{state}`, which `{}` does not have",
                    machine.id()
                ));
            }
        }
    }
    let mut names = HashSet::new();
    for prompt in catalog.prompts.read().unwrap_or_else(|p| p.into_inner()).iter() {
        if !names.insert(prompt.name().to_string()) {
            problem(format!("prompt `{}` is declared twice", prompt.name()));
        }
        let arguments: Vec<&str> = prompt.definition.arguments.iter().flatten().map(|a| a.name.as_str()).collect();
        for argument in prompt.completions.keys() {
            if !arguments.contains(&argument.as_str()) {
                problem(format!("prompt `{}` completes `{argument}`, which it does not take", prompt.name()));
            }
        }
    }
    problems
}

//! [`ServerBuilder`] itself: what a server is configured with, and the settings of its
//! engine, store, registry and catalog.

use std::sync::Arc;
use std::time::Duration;

use crate::action::States;
use crate::confirm::Confirmations;
use crate::domain::DomainPolicy;
use crate::engine::Limits;
use crate::flow::DEFAULT_HANDLE_TTL;
use crate::fsm::Machine;
use crate::prompt::Prompt;
use crate::registry::RegistryOptions;
use crate::resource::{Resource, ResourceTemplate};
use crate::server::AuthOptions;
use crate::server::catalog::Catalog;
use crate::server::http_options::HttpOptions;
use crate::store::{FlowStore, HistoryRetention};

/// Configures a [`Server`](crate::Server); finish with [`ServerBuilder::build`] or
/// [`ServerBuilder::run_cli`].
#[must_use = "a builder does nothing until built"]
pub struct ServerBuilder {
    pub(in crate::server) name: String,
    pub(in crate::server) version: String,
    pub(in crate::server) instructions: Option<String>,
    pub(in crate::server) options: RegistryOptions,
    pub(in crate::server) store: Option<Arc<dyn FlowStore>>,
    /// A SQLite file to open once the registry is known to be valid.
    pub(in crate::server) store_file: Option<std::path::PathBuf>,
    pub(in crate::server) handle_keys: Vec<Vec<u8>>,
    pub(in crate::server) handle_ttl: Duration,
    pub(in crate::server) limits: Limits,
    pub(in crate::server) sessionless: bool,
    pub(in crate::server) http: HttpOptions,
    pub(in crate::server) states: States,
    pub(in crate::server) auth: AuthOptions,
    pub(in crate::server) confirmations: Confirmations,
    pub(in crate::server) catalog: Catalog,
    pub(in crate::server) audit_sinks: Vec<Arc<dyn crate::telemetry::AuditSink>>,
    /// The tables of yours, created in the store's database before the first call
    /// writes them.
    pub(in crate::server) tables: Option<String>,
    pub(in crate::server) effects: crate::effect::Effects,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ServerBuilder {
    pub(in crate::server) fn new(name: String) -> Self {
        Self {
            name,
            version: "0.0.0".into(),
            instructions: None,
            options: RegistryOptions::default(),
            store: None,
            store_file: None,
            tables: None,
            effects: Default::default(),
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

    /// Runs `hook` in the commit of every transition that enters `state` of the keyed
    /// machine `machine` — by a call, by time (`after`), by a task's end, and its creation
    /// into the initial state — with the [`Transaction`](crate::Transaction) the
    /// transition commits in and the instance it moves ([`Moved`](crate::Moved)):
    /// the rows you write commit with the transition, or neither does. A hook that fails
    /// fails the transition (a call's is `INTERNAL`; time's is tried again by the next
    /// sweep).
    ///
    /// ```no_run
    /// # use toolgate_runtime::{Moved, Server, ToolError, Transaction};
    /// async fn expire_row(tx: Transaction, moved: Moved) -> Result<(), ToolError> {
    ///     let id = moved.instance.clone();
    ///     tx.execute("UPDATE expenses SET status = 'expired' WHERE id = $1", &[id.into()]).await?;
    ///     Ok(())
    /// }
    /// # fn f() { let _ =
    /// Server::from_registry("desk").on_entry("expense", "expired", expire_row)
    /// # ; }
    /// ```
    ///
    /// A hook is not an effect: it runs inside the commit and reaches only your tables;
    /// an effect (`entry:` in the machine) runs after it, at least once, and may call the
    /// world. A server with hooks needs a store that keeps tables of yours (the SQLite file,
    /// Postgres) and does not start on another; one naming no state of a keyed machine
    /// does not start either.
    pub fn on_entry<F, Fut>(mut self, machine: &str, state: &str, hook: F) -> Self
    where
        F: Fn(crate::Transaction, crate::Moved) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), crate::ToolError>> + Send + 'static,
    {
        self.options.hooks.push(crate::hook::HookRegistration::new(
            machine,
            state,
            crate::hook::HookPoint::Entry,
            hook,
        ));
        self
    }

    /// Runs `hook` in the commit of every transition that leaves `state` of `machine`, as
    /// [`ServerBuilder::on_entry`] runs its hook as one enters a state; a transition's
    /// `exit` hooks run before its `entry` hooks.
    pub fn on_exit<F, Fut>(mut self, machine: &str, state: &str, hook: F) -> Self
    where
        F: Fn(crate::Transaction, crate::Moved) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), crate::ToolError>> + Send + 'static,
    {
        self.options.hooks.push(crate::hook::HookRegistration::new(machine, state, crate::hook::HookPoint::Exit, hook));
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

    /// Keeps flows in `store` instead of the default [`MemoryStore`](crate::store::MemoryStore).
    pub fn store(mut self, store: impl FlowStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The tables of yours that handlers write through their call's
    /// [`Transaction`](crate::Transaction), kept in the store's own database (the SQLite
    /// file, or the Postgres database, in your schema): statements without parameters,
    /// separated by `;`, that create them if they are missing (`CREATE TABLE IF NOT
    /// EXISTS …`). They run once, in a transaction of their own, as the server starts
    /// serving (`serve_http`, `serve_stdio`), so the tables exist before any call writes
    /// them. A store that keeps no tables of yours (memory, Redis) refuses to
    /// start with them.
    pub fn tables(mut self, sql: impl Into<String>) -> Self {
        self.tables = Some(sql.into());
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

    /// Registers the effect `name`: the function a commit's recorded effect of that name
    /// ([`Ctx::effect`](crate::Ctx::effect)) is dispatched to, after the commit, at least
    /// once, with one idempotency key per effect ([`EffectCall::key`](crate::effect::EffectCall::key)).
    ///
    /// ```no_run
    /// # use toolgate_runtime::{Server, effect::{EffectCall, EffectError}};
    /// # #[derive(serde::Deserialize)] struct Hold { seats: u32 }
    /// let builder = Server::from_registry("travel").effect("release_hold", |call: EffectCall| async move {
    ///     let hold: Hold = call.input()?;
    ///     // Tell the operator to release `hold.seats`, under `call.key()`.
    ///     Ok::<(), EffectError>(())
    /// });
    /// ```
    pub fn effect<F, Fut>(mut self, name: &str, function: F) -> Self
    where
        F: Fn(crate::effect::EffectCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), crate::effect::EffectError>> + Send + 'static,
    {
        self.effects.add(name, function);
        self
    }

    /// How effects are retried and when they are dead-lettered (default:
    /// [`EffectPolicy::default`](crate::effect::EffectPolicy)).
    pub fn effect_policy(mut self, policy: crate::effect::EffectPolicy) -> Self {
        self.effects.policy = policy;
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

    /// Keeps the server's state in the store `url` names, through the one table of
    /// schemes ([`store::open`](crate::store::open)): `sqlite:PATH` (opened by
    /// [`build`](Self::build), as [`store_file`](Self::store_file)), `redis://…`,
    /// `postgres://…` (reached now, as `options` say) or `memory`. What `--store` does.
    pub async fn store_url(
        mut self,
        url: &str,
        options: &crate::store::StoreOptions,
    ) -> Result<Self, crate::store::OpenStoreError> {
        Ok(match crate::store::open(url, options).await? {
            crate::store::Opened::Store(store) => {
                self.store = Some(store);
                self.store_file = None;
                self
            }
            crate::store::Opened::File(path) => self.store_file(path),
        })
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

    /// Lets principals holding any of `scopes` act on every instance of the principal-owned
    /// machine `machine` in their tenant, whoever created it: "the creator owns a report, a
    /// manager approves it". What each may do is still each tool's own `scope`: a manager
    /// holding `expenses:approve` approves, and does not amend where amending takes
    /// `expenses:file`. Everyone else is told of another's instance what a key never created
    /// gets (`NOT_FOUND`), by every tool, the history tool and the reply's `next` alike. A
    /// machine that is not principal-owned stops start-up.
    pub fn owned_instances_managed_by<S: Into<String>>(
        mut self,
        machine: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.options.managers.insert(machine.into(), scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Offers the history tool of the keyed machine `machine`: `<machine>_history` (in a
    /// domain of another name, `<domain>_<machine>_history`; a machine whose tools span
    /// domains gets one in each, judged by the intent lock as that domain's tools are),
    /// taking the machine's key as
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
}

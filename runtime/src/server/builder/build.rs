//! [`ServerBuilder::build`]: the registry collected and every setting checked at once —
//! each problem reported, none after the first only — and the server assembled.

use super::server_builder::ServerBuilder;
use crate::auth::metadata::ProtectedResource;
use crate::auth::{Principal, Roster, StaticTokens};
use crate::confirm::Confirmations;
use crate::engine::Engine;
use crate::flow::handle::{HANDLE_KEY_ENV, HANDLE_KEYS_ENV};
use crate::flow::{Flows, HandleSigner, WeakKey};
use crate::gate::Limiter;
use crate::registry::ToolKind;
use crate::registry::{Registry, StartupError, StartupProblem};
use crate::server::catalog::Catalog;
use crate::server::{Server, Shared};
use crate::store::{FlowStore, MemoryStore};
use rmcp::model::Implementation;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

impl ServerBuilder {
    /// The checked registry alone, without a store or anything else a running server
    /// needs: what `describe`, `export` and `audit` read.
    pub(in crate::server) fn into_registry(self) -> Result<Registry, StartupError> {
        Registry::collect(self.options, &self.states)
    }

    /// Every tool graded against the routing checklist, its scopes against the principals
    /// configured so far and those of `also`: what `audit` prints, without building the
    /// server (no store is opened, no confirmation channel needed).
    pub(in crate::server) fn into_audit(mut self, also: Roster) -> Result<crate::inspect::Audit, StartupError> {
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
        // The effects: the builder's, and the functions `machine!`s name as `entry`/`exit`.
        let mut effects = self.effects;
        effects.states = self.states.clone();
        for machine in inventory::iter::<crate::registry::MachineRegistration> {
            for state in machine.states {
                for (name, function) in state.entry.iter().chain(state.exit) {
                    effects.add_declared(name, *function);
                }
            }
        }
        if let Some(registry) = &registry {
            problems.extend(check_catalog(&self.catalog, registry));
            problems.extend(confirmation_problems(registry, &self.confirmations));
            problems.extend(missing_effects(registry, &effects));
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
            problems.extend(store_problems(store.as_ref(), registry.as_ref(), has_handle_key, self.tables.is_some()));
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
                    problems.extend(store_problems(
                        file.as_ref(),
                        registry.as_ref(),
                        has_handle_key,
                        self.tables.is_some(),
                    ));
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
            shared: Arc::new_cyclic(|this: &std::sync::Weak<Shared>| Shared {
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
                    in_flight: Default::default(),
                    minting: Default::default(),
                    tables: self.tables.map(|sql| Arc::new(crate::store::Tables::new(sql))),
                    effects: Arc::new(effects),
                    refusals: Default::default(),
                    task_log: Default::default(),
                    dead_letters: Default::default(),
                    left_to_their_servers: Default::default(),
                    host: this.clone() as std::sync::Weak<dyn std::any::Any + Send + Sync>,
                }),
                implementation: Implementation::new(self.name, self.version),
                instructions: self.instructions,
                sessionless: self.sessionless,
                lifecycle: Arc::new(super::super::lifecycle::Lifecycle::new(
                    self.http.drain_delay,
                    self.http.shutdown_grace,
                )),
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
/// replica knows, tables of yours its handlers write.
fn store_problems(
    store: &dyn FlowStore,
    registry: Option<&Registry>,
    has_handle_key: bool,
    has_tables: bool,
) -> Vec<StartupProblem> {
    let mut problems = Vec::new();
    let writers: Vec<&str> = registry
        .map(|r| r.tools().iter().filter(|t| t.takes_transaction).map(|t| t.name).collect())
        .unwrap_or_default();
    let hooked: Vec<String> =
        registry.map(|r| r.hooks().machines().map(|m| format!("`{m}`")).collect()).unwrap_or_default();
    let capabilities = store.capabilities();
    if (!writers.is_empty() || !hooked.is_empty() || has_tables) && capabilities.tables.is_none() {
        let tools = writers.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
        let who = match (writers.is_empty(), hooked.is_empty()) {
            (true, true) => "the server creates tables of yours".to_string(),
            (false, true) => format!("{tools} write tables of yours through a `Transaction`"),
            (true, false) => format!(
                "the transactional hooks of machine {} (`on_entry`, `on_exit`) write tables of yours",
                hooked.join(", ")
            ),
            (false, false) => format!(
                "{tools} write tables of yours through a `Transaction`, as do the transactional hooks of machine {}",
                hooked.join(", ")
            ),
        };
        problems.push(StartupProblem::Store {
            problem: format!(
                "{who}, and the store keeps none beside its own: run the server on the SQLite file (the default, `--store sqlite:PATH`) or on Postgres (`--store postgres://…`)"
            ),
        });
    }
    let history_tools: Vec<&str> = registry.map(|r| r.history_tools().collect()).unwrap_or_default();
    if !history_tools.is_empty() && capabilities.history.is_none() {
        problems.push(StartupProblem::Store {
            problem: format!(
                "{} show instances' histories, and the store keeps none: give the server a store that keeps them (memory, SQLite, Redis)",
                history_tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    if capabilities.replicas.is_some() && !has_handle_key {
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

/// Each machine whose states name an `entry` or `exit` effect the server has no function
/// for (a machine loaded from XState JSON: give it with `ServerBuilder::effect`).
fn missing_effects(registry: &Registry, effects: &crate::effect::Effects) -> Vec<StartupProblem> {
    (registry.machines())
        .filter_map(|machine| {
            let mut missing: Vec<String> = (machine.spec().states.iter())
                .flat_map(|state| state.entry.iter().chain(&state.exit))
                .filter(|name| !effects.has(name))
                .cloned()
                .collect();
            missing.sort();
            missing.dedup();
            (!missing.is_empty())
                .then(|| StartupProblem::MissingEffects { machine: machine.id().to_string(), effects: missing })
        })
        .collect()
}

impl Server {
    /// Starts building a server named `name` from every `#[action]` and `machine!` linked
    /// into the binary.
    pub fn from_registry(name: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name.into())
    }
}

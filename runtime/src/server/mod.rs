//! The MCP server: a [`Server`] holds the registry and the flow store; each client
//! connection (stdio, or one Streamable HTTP session) is served by a [`Connection`].

mod call;
mod cli;
mod connection;
mod transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::Implementation;

pub use cli::ServeError;
pub use connection::Connection;

use crate::domain::DomainPolicy;
use crate::fsm::Machine;
use crate::registry::{Registry, RegistryOptions, StartupError};
use crate::store::{FlowStore, MemoryStore};

/// A toolgate MCP server: the registry of tools, the machines, and the flow store.
///
/// Cheap to clone; clones serve the same flows.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) registry: Registry,
    pub(crate) store: Arc<dyn FlowStore>,
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    next_connection: AtomicU64,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.shared.implementation.name)
            .field("tools", &self.shared.registry.tool_names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server named `name` from every `#[action]` and `machine!` linked
    /// into the binary.
    pub fn from_registry(name: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            name: name.into(),
            version: "0.0.0".into(),
            instructions: None,
            options: RegistryOptions::default(),
            store: None,
        }
    }

    /// A handler for one new client connection, with its own connection-scoped flow.
    pub fn connection(&self) -> Connection {
        let id = self.shared.next_connection.fetch_add(1, Ordering::Relaxed);
        Connection::new(self.shared.clone(), id)
    }

    /// The checked registry this server serves.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }
}

/// Configures a [`Server`]; finish with [`ServerBuilder::build`] or
/// [`ServerBuilder::run_cli`].
#[must_use = "a builder does nothing until built"]
pub struct ServerBuilder {
    name: String,
    version: String,
    instructions: Option<String>,
    options: RegistryOptions,
    store: Option<Arc<dyn FlowStore>>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ServerBuilder {
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

    /// How the intent lock applies (default [`DomainPolicy::Strict`]).
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

    /// A one-line description of `domain`, listed in `switch_domain`'s description.
    pub fn describe_domain(mut self, domain: impl Into<String>, description: impl Into<String>) -> Self {
        self.options.domain_descriptions.insert(domain.into(), description.into());
        self
    }

    /// Keeps flows in `store` instead of the default [`MemoryStore`].
    pub fn store(mut self, store: impl FlowStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Collects and checks the registry; every problem is reported at once.
    pub fn build(self) -> Result<Server, StartupError> {
        let registry = Registry::collect(self.options)?;
        Ok(Server {
            shared: Arc::new(Shared {
                registry,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                implementation: Implementation::new(self.name, self.version),
                instructions: self.instructions,
                next_connection: AtomicU64::new(1),
            }),
        })
    }

    /// Builds the server and serves it as the command line says: stdio by default,
    /// `--http ADDR` for Streamable HTTP at `http://ADDR/mcp`.
    pub async fn run_cli(self) -> Result<(), ServeError> {
        self.build()?.run_cli().await
    }
}

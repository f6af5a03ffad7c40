//! What every call of one server shares: the [`Engine`] (registry, store, flows, limits,
//! confirmations, effects, what the console shows) and its [`Limits`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::running_tasks::{RunningTasks, TaskLimits};
use super::unserved::LeftToTheirServers;
use crate::action::States;
use crate::confirm::Confirmations;
use crate::flow::Flows;
use crate::gate::Limiter;
use crate::records::{Records, TimerCommit};
use crate::registry::Registry;
use crate::store::{FlowStore, Snapshot, StoreKey};
use crate::telemetry::AuditSink;

/// The engine of one server (all its connections and transports share it).
pub(crate) struct Engine {
    /// Itself, for what outlives a borrow of it (a handler's `Ctx`).
    pub(crate) this: std::sync::Weak<Engine>,
    pub(crate) registry: Registry,
    pub(crate) store: Arc<dyn FlowStore>,
    pub(crate) flows: Flows,
    pub(crate) limits: Limits,
    /// The application states handlers receive as `State<T>`.
    pub(crate) states: States,
    /// The declared rate limits, by tool.
    pub(crate) limiters: HashMap<&'static str, Limiter>,
    /// How `confirm`ed tools are confirmed.
    pub(crate) confirmations: Confirmations,
    /// Where committed transitions are recorded.
    pub(crate) audit_sinks: Vec<Arc<dyn AuditSink>>,
    /// The transitions time fired, as they are committed (by a sweep or a call's read).
    pub(crate) timers: tokio::sync::broadcast::Sender<TimerCommit>,
    /// The tasks this process runs, and how to cancel each.
    pub(crate) running: RunningTasks,
    /// One minting at a time per key counter in this process.
    pub(crate) minting: crate::records::MintLocks,
    /// The calls and tasks in flight, for a shutdown to wait for.
    pub(crate) in_flight: super::InFlight,
    /// The tables of yours the server creates before the first call writes them.
    pub(crate) tables: Option<Arc<crate::store::Tables>>,
    /// The effects commits record, and how they are dispatched.
    pub(crate) effects: Arc<crate::effect::Effects>,
    /// The calls this process refused in the last day (the console's refusals page).
    pub(crate) refusals: crate::telemetry::Refusals,
    /// The tasks this process started lately (the console's tasks page).
    pub(crate) task_log: crate::telemetry::TaskLog,
    /// The instances this process dead-lettered an effect of lately (the console's
    /// effects page).
    pub(crate) dead_letters: Arc<crate::telemetry::DeadLetterLog>,
    /// The due instances of machines this server lacks that its sweeps leave to a server
    /// that has them (`timers.rs`).
    pub(crate) left_to_their_servers: LeftToTheirServers,
    /// The server this engine serves, given at build, for a handler's
    /// [`Ctx::server`](crate::Ctx::server) (`server/` sits above the engine and reads it
    /// back as its own type).
    pub(crate) host: std::sync::Weak<dyn std::any::Any + Send + Sync>,
}

/// How long calls wait, and may run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// How long a transitioning call waits for a lease before `FLOW_BUSY`.
    pub(crate) lease_wait: Duration,
    /// A handler's deadline unless its action sets one.
    pub(crate) handler_timeout: Duration,
    /// The most an instance's context may hold, serialized.
    pub(crate) max_context_bytes: usize,
    /// How many tasks run, and how long they are kept.
    pub(crate) tasks: TaskLimits,
}

/// The default wait for a lease held by another call.
pub const DEFAULT_LEASE_WAIT: Duration = Duration::from_secs(5);

/// The default handler deadline.
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for Limits {
    fn default() -> Self {
        Self {
            lease_wait: DEFAULT_LEASE_WAIT,
            handler_timeout: DEFAULT_HANDLER_TIMEOUT,
            max_context_bytes: crate::action::DEFAULT_MAX_CONTEXT_BYTES,
            tasks: TaskLimits::default(),
        }
    }
}

impl crate::action::CallEngine for Engine {
    fn store(&self) -> Arc<dyn FlowStore> {
        self.store.clone()
    }

    fn instance_key(
        &self,
        tool: &str,
        instance: &str,
        principal: Option<&crate::auth::Principal>,
    ) -> Option<(StoreKey, bool)> {
        let machine = self.registry.tool(tool)?.machine.as_deref().filter(|m| m.key().is_some())?;
        let owned = crate::visibility::owner_rule_applies(machine, principal);
        Some((crate::visibility::instance_key(machine, instance, principal), owned))
    }

    fn transitions(&self, tool: &str) -> bool {
        self.registry.tool(tool).is_some_and(|tool| tool.transition().is_some())
    }

    fn has_effect(&self, name: &str) -> bool {
        self.effects.has(name)
    }

    fn host(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.host.upgrade()
    }
}

impl Engine {
    /// The store as this engine's calls see it.
    pub(crate) fn records(&self) -> Records<'_> {
        Records {
            store: self.store.as_ref(),
            shared: &self.store,
            tables: self.tables.as_ref(),
            hooks: self.registry.hooks(),
            retention: self.registry.history().retention,
            lease_wait: self.limits.lease_wait,
            flows: &self.flows,
            timers: &self.timers,
            minting: &self.minting,
        }
    }

    /// The domain a flow's intent lock holds, if any.
    pub(crate) fn active_domain(&self, flow: &Snapshot) -> Option<String> {
        self.registry.lock().active(flow).map(str::to_string)
    }
}

//! Actions: the user's async handlers behind a type-erased call, and what they receive.
//!
//! `#[action]` registers each handler as an [`ActionRegistration`] whose `handler` is a
//! [`Handler`] of plain function pointers built in a `const` — so the registration is
//! static data, and the input and output types are checked once each, through
//! [`ActionInput`] and [`ActionOutput`].

mod call_engine;
mod client;
mod context_slot;
mod ctx;
mod declared;
mod driver;
mod extract;
mod handler;
mod history;
mod instance;
mod probe;
mod state;
mod transaction;
mod transaction_slot;

pub(crate) use call_engine::CallEngine;
pub use client::LogLevel;
pub(crate) use client::{CallClient, FirstWait, LogThreshold, RequestSide};
pub(crate) use context_slot::ContextSlot;
pub(crate) use ctx::CallNote;
pub use ctx::{Ctx, Progress};
pub use declared::{
    DeclaredMachine, DeclaredState, IsDeclared, LookupAnswer, MachineDeclared, MachineId, NotDeclared,
    UndeclaredMachine, declared_machine,
};
#[cfg(feature = "postgres")]
pub use driver::PostgresClient;
pub use extract::{ContextRequirement, FromCtx};
pub use handler::{ActionInput, ActionOutput, Arguments, BoxFuture, Called, Handler, InputIo, Output, OutputIo};
pub use instance::{DEFAULT_MAX_CONTEXT_BYTES, Instance, InstanceContext, InstanceMut};
pub use probe::{
    AtModuleLevel, GuardFound, GuardMissing, NOT_AT_MODULE_LEVEL, NoGuard, NotAtModuleLevel, Probe, ProbeAnswer,
    StandIn, answer, no_guard,
};
pub(crate) use state::States;
pub use state::{State, StateRequirement};
pub use transaction::{Transaction, TransactionFuture};
pub(crate) use transaction_slot::TransactionSlot;

/// Where a macro-generated item came from, for start-up diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLocation {
    /// `file!()` of the annotated item.
    pub file: &'static str,
    /// `line!()` of the annotated item.
    pub line: u32,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A declared rate limit (`#[action(rate_limit = "30/minute per client")]`): at most
/// `calls` calls in any window of `per_ms` milliseconds, counted `per` client, instance or
/// tool. Parsed by the grammar the macro shares.
pub use toolgate_machine::grammar::{Rate as RateLimit, RatePer};

/// One `#[action]`, as the macro registers it at link time.
#[derive(Clone, Copy)]
pub struct ActionRegistration {
    /// The MCP tool name (`invoice_discharge`).
    pub name: &'static str,
    /// The intent domain (`invoice`); `None` for a global tool.
    pub domain: Option<&'static str>,
    /// `machine = "…"` as written; the registry applies the default (the domain's).
    pub machine: Option<&'static str>,
    /// States in which the tool is callable; empty means always.
    pub bind_states: &'static [&'static str],
    /// The event a successful call fires.
    pub transition: Option<&'static str>,
    /// `creates`: the call creates an instance of its keyed machine (`mint`), in the
    /// initial state, with a key the store mints.
    pub creates: bool,
    /// The full description (the doc comment).
    pub description: &'static str,
    /// The description shown while the machine is in its initial state.
    pub compact: Option<&'static str>,
    /// What the tool does *not* do, appended to the description.
    pub not_for: Option<&'static str>,
    /// The handler's deadline in milliseconds (`timeout = "30s"`); the server's default
    /// when `None`.
    pub timeout_ms: Option<u64>,
    /// `rate_limit = "30/minute per client"`.
    pub rate_limit: Option<RateLimit>,
    /// `transactional`: the tool moves money or data, and refuses any call without an
    /// authenticated principal (`UNAUTHENTICATED`), whatever the arguments say.
    pub transactional: bool,
    /// `expensive`: each call costs something (money, a slow backend); the audit asks such
    /// a tool to declare a `rate_limit`.
    pub expensive: bool,
    /// `confirm = "otp"`: a call runs only with a one-time code bound to it (and
    /// `confirm_above`: only above an amount).
    pub confirm: Option<crate::confirm::ConfirmPolicy>,
    /// `idempotency_key = "request_id"`: the input field whose value makes a retry return
    /// the first result instead of running again.
    pub idempotency_key: Option<&'static str>,
    /// `scope = "payments:capture"` (or a list): every scope a principal needs to see and
    /// call the tool.
    pub scopes: &'static [&'static str],
    /// Whether a handler parameter needs a principal (`Principal`): the call is refused
    /// without one before the handler runs.
    pub needs_principal: bool,
    /// The type of each handler parameter after the input: what the server reads from
    /// them of its own (a handler that takes `Ctx` can send the client requests).
    pub parameters: &'static [fn() -> core::any::TypeId],
    /// `allow_unknown_fields`: arguments the input type does not have are ignored rather
    /// than refused.
    pub allow_unknown_fields: bool,
    /// What each parameter after the input needs from the server: `Some` for a
    /// `State<T>`, `None` for the others (`Ctx`).
    pub states: &'static [Option<StateRequirement>],
    /// What each parameter after the input reads of the instance's context: `Some` for
    /// an `Instance<T>` or `InstanceMut<T>`.
    pub contexts: &'static [Option<ContextRequirement>],
    /// `task = "optional" | "required"`: whether a call may or must run as an MCP task.
    pub task: TaskSupport,
    /// The handler.
    pub handler: Handler,
    /// Where the `#[action]` is.
    pub location: SourceLocation,
}

/// Whether a tool's calls may run as MCP tasks (the 2026-07-28 Tasks extension):
/// `#[action(task = "optional")]` or `"required"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Every call finishes within its request (the default).
    #[default]
    Never,
    /// A call from a client that declared the extension runs as a task; any other runs
    /// within its request.
    Optional,
    /// A call runs only as a task: a client that did not declare the extension gets
    /// `-32021` naming it.
    Required,
}

impl std::fmt::Debug for ActionRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionRegistration")
            .field("name", &self.name)
            .field("machine", &self.machine)
            .field("bind_states", &self.bind_states)
            .field("transition", &self.transition)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

inventory::collect!(ActionRegistration);

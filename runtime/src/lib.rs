//! The runtime of toolgate (the `toolgate` crate; `cargo doc --open -p toolgate`): registry, state machines, gate,
//! flows and stores, the error contract, and the rmcp server.
//!
//! Most users depend on the `toolgate` facade crate instead, which re-exports this crate
//! together with the `#[action]` and `machine!` macros.

mod action;
mod app_state;
mod arguments;
mod auth;
mod calls_first;
mod client;
mod commit;
pub mod completion;
pub mod confirm;
pub mod console;
pub mod content;
mod domain;
pub mod effect;
mod engine;
mod error;
pub mod flow;
pub mod fsm;
#[cfg(feature = "fuzz")]
#[doc(hidden)]
pub mod fuzzing;
mod gate;
mod hook;
pub mod input;
pub mod inspect;
pub mod prompt;
mod records;
pub mod registry;
pub mod resource;
mod schema;
pub mod server;
pub mod store;
mod task;
pub mod telemetry;
#[cfg(feature = "tls")]
mod tls;
pub mod types;
mod visibility;
mod wait;

#[cfg(feature = "postgres")]
pub use action::PostgresClient;
pub use action::{
    ActionInput, ActionOutput, Ctx, DEFAULT_MAX_CONTEXT_BYTES, FromCtx, Instance, InstanceContext, InstanceMut,
    LogLevel, Progress, SourceLocation, State, Transaction, TransactionFuture,
};
#[cfg(feature = "jwt")]
pub use auth::JwtAuthenticator;
pub use auth::{AuthError, AuthFuture, Authenticator, Principal, Roster, StaticTokens};
pub use domain::DomainPolicy;
pub use error::{Failure, FieldError, Retry, ToolError};
pub use fsm::{Caller, Guard, GuardFn, Machine};
pub use hook::Moved;
pub use registry::Exposition;
/// The rusqlite the SQLite store is built on, for code of yours that runs in a call's
/// transaction ([`Transaction::sqlite_at_commit`]): its exact version, so that its types
/// are the ones the store hands out.
pub use rusqlite;
pub use server::{Server, ServerBuilder};
/// The tokio-postgres the Postgres store is built on (feature `postgres`), for code of
/// yours that runs in a call's transaction ([`Transaction::postgres`]): its exact version,
/// so that its `GenericClient` is the one the store's client implements.
#[cfg(feature = "postgres")]
pub use tokio_postgres;

/// What the macros' generated code refers to. Not a public API: it changes without notice.
///
/// Generated code names the runtime through this module only (the layering test holds it),
/// so it re-exports the public items that code needs too (`Ctx`, `FromCtx`, `ToolError`,
/// …). rustc still prints those by their public path (`toolgate::FromCtx`), never through
/// this hidden module, as the UI tests' pinned diagnostics show
/// (`tests/ui/action/three_params.stderr`, `tests/ui/machine/guard_wrong_context.stderr`).
#[doc(hidden)]
pub mod __private {
    pub use crate::action::{ActionInput, ActionOutput, Ctx, FromCtx, InstanceContext};
    pub use crate::action::{
        ActionRegistration, Arguments, BoxFuture, Called, ContextRequirement, Handler, InputIo, Output, OutputIo,
        RateLimit, RatePer, SourceLocation, StateRequirement, TaskSupport,
    };
    pub use crate::action::{
        AtModuleLevel, GuardFound, GuardMissing, NOT_AT_MODULE_LEVEL, NoGuard, NotAtModuleLevel, Probe, ProbeAnswer,
        StandIn, answer, no_guard,
    };
    pub use crate::action::{
        DeclaredMachine, DeclaredState, IsDeclared, LookupAnswer, MachineDeclared, MachineId, NotDeclared,
        UndeclaredMachine, declared_machine,
    };
    pub use crate::confirm::{ConfirmAbove, ConfirmPolicy};
    pub use crate::effect::{Attempt, EffectCall, EffectFnPtr};
    pub use crate::error::{Failure, ToolError};
    pub use crate::fsm::{ContextType, GuardRegistration, Verdict, judge as judge_guard};
    pub use crate::registry::{MachineRegistration, StateRegistration};
    pub use inventory;
}

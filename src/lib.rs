//! # toolgate
//!
//! Build MCP (Model Context Protocol) servers in which the **server** — not the model's
//! good behaviour — stops the wrong tool call.
//!
//! You write async handlers and annotate them with [`#[action]`](macro@action). toolgate turns
//! them into MCP tools that are **gated by workflow state**: a tool bound to a state of a
//! [`machine!`] is absent from a session's `tools/list` outside that state, and a client
//! that calls it anyway gets a structured `FORBIDDEN` result naming the tools it *can*
//! call. A successful call fires the tool's transition and commits it atomically, per
//! instance of a keyed machine or per conversation.
//!
//! ```no_run
//! use toolgate::prelude::*;
//!
//! toolgate::machine! {
//!     id: "invoice",
//!     key: "id", // one instance per invoice: calls name it with their `id` argument
//!     initial: "draft",
//!     states: {
//!         draft:      { on: { SUBMIT: "review" } },
//!         review:     { on: { APPROVE: "approved", REJECT: "draft" } },
//!         approved:   { on: { DISCHARGE: "discharged" } },
//!         discharged: { type: "final" },
//!     }
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct InvoiceRef {
//!     /// The invoice id.
//!     id: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Discharged {
//!     id: String,
//! }
//!
//! /// Discharge an approved invoice. Does not refund or reopen invoices.
//! #[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
//! async fn discharge(input: InvoiceRef) -> Result<Discharged, ToolError> {
//!     Ok(Discharged { id: input.id })
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), ServeError> {
//!     // stdio by default; `--http 127.0.0.1:8080` serves Streamable HTTP at /mcp.
//!     toolgate::Server::from_registry("invoice").run_cli().await
//! }
//! ```
//!
//! The tool above is `invoice_discharge`; its input schema comes from `InvoiceRef` (plus
//! the required `domain` field toolgate adds), its output schema and `structuredContent`
//! from `Discharged` plus the fields toolgate adds: `state` (the machine's state after the
//! call), `next` (the tools callable now on that invoice) and `domain`. Refusals are tool
//! results too, with a stable `code` ([`ToolError`]; a handler's own is a [`Failure`]).
//!
//! ## The guide
//!
//! The repository's `README.md` is the way in; its `docs/` folder holds the guide, one
//! page per concept:
//!
//! - `docs/instances-and-flows.md` — keyed and conversation machines, state handles,
//!   `next`, the intent lock ([`DomainPolicy`]), cross-domain gating;
//! - `docs/who-is-calling.md` — principals, scopes, confirmations and where their codes
//!   go, the stdio principal, tenants, idempotency, rate limits ([`auth`], [`confirm`]);
//! - `docs/stores-and-replicas.md` — the SQLite, memory, Redis and Postgres stores
//!   ([`store`]);
//! - `docs/protocol-eras-and-clients.md` — MCP 2025-11-25 and 2026-07-28, clients, HTTP
//!   limits, conformance;
//! - `docs/see-and-audit.md` — `describe`, `export --xstate`, `audit`, history, tracing
//!   and metrics ([`inspect`], [`telemetry`]);
//! - `docs/time.md` — an instance's data ([`Instance`], [`InstanceMut`]), guards
//!   ([`Guard`]), timers, deadlines, MCP tasks (a task handler, a Python client);
//! - `docs/exposition-and-cost.md` — what a model is shown of a tool, grouped tools,
//!   `describe --format cost`;
//! - `docs/errors.md` — every error code, a handler's failures, argument [`types`];
//! - `docs/handlers.md` — a handler's parameters ([`State`], [`Ctx`], [`FromCtx`]),
//!   results ([`content`]), asking the client ([`input`]), where `machine!` and actions
//!   go, resources, prompts and completions ([`resource`], [`prompt`], [`completion`]).
//!
//! How each call is judged, step by step, is `docs/call-pipeline.md`. The guide's `rust`
//! examples compile as this crate's doctests.

pub use toolgate_macros::{action, machine};
pub use toolgate_runtime::{
    ActionInput, ActionOutput, Caller, Ctx, DEFAULT_MAX_CONTEXT_BYTES, DomainPolicy, Exposition, Failure, FieldError,
    FromCtx, Guard, GuardFn, Instance, InstanceContext, InstanceMut, LogLevel, Machine, Moved, Progress, Retry, Server,
    ServerBuilder, State, ToolError, Transaction,
};
pub use toolgate_runtime::{completion, content, effect, input, inspect, prompt, resource, telemetry};
pub use toolgate_runtime::{fsm, store, types};

#[cfg(feature = "postgres")]
pub use toolgate_runtime::PostgresClient;
/// The rusqlite the SQLite store is built on, its exact version: code of yours for
/// rusqlite runs in a call's transaction ([`Transaction::sqlite_at_commit`]).
pub use toolgate_runtime::rusqlite;
/// The tokio-postgres the Postgres store is built on, its exact version (feature
/// `postgres`): code of yours taking `&impl GenericClient` runs in a call's transaction
/// ([`Transaction::postgres`]).
#[cfg(feature = "postgres")]
pub use toolgate_runtime::tokio_postgres;

/// Who is calling: the [`Principal`] a handler can take as a parameter, the
/// [`Authenticator`] that resolves it from a request's bearer token, and [`StaticTokens`].
pub mod auth {
    #[cfg(feature = "jwt")]
    pub use toolgate_runtime::JwtAuthenticator;
    pub use toolgate_runtime::{AuthError, AuthFuture, Authenticator, Principal, Roster, StaticTokens};
}
pub use auth::{Authenticator, Principal, StaticTokens};

/// Confirmations: the one-time codes that `#[action(confirm = "otp")]` tools run with,
/// and the channels that deliver them.
pub mod confirm {
    #[cfg(feature = "webhook")]
    pub use toolgate_runtime::confirm::WebhookSender;
    pub use toolgate_runtime::confirm::{
        CHALLENGE_ARGUMENT, DEFAULT_CHALLENGE_TTL, DEFAULT_LOCK, DEFAULT_MAX_ATTEMPTS, OTP_ARGUMENT, OtpDelivery,
        OtpError, OtpFuture, OtpSender, OutboxSender, TotpSecrets,
    };
}

/// Flows (conversations): how a handler tells them apart, and the state handle that
/// names one across sessionless requests.
pub mod flow {
    pub use toolgate_runtime::flow::handle::{HANDLE_KEY_ENV, HANDLE_KEYS_ENV, MIN_KEY_BYTES};
    pub use toolgate_runtime::flow::{DEFAULT_HANDLE_ARGUMENT, DEFAULT_HANDLE_TTL, FlowId, WeakKey};
}

/// The tools and machines a server was built from, and what stops it from starting.
pub mod registry {
    pub use toolgate_runtime::SourceLocation;
    pub use toolgate_runtime::registry::{Registry, StartupError, StartupProblem};
}

/// Serving: the [`Server`] and its builder, one connection, the limits'
/// defaults, and what stops a server once it runs.
pub mod server {
    pub use toolgate_runtime::server::{
        Connection, DEFAULT_DRAIN_DELAY, DEFAULT_HANDLER_TIMEOUT, DEFAULT_LEASE_WAIT, DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_MAX_LISTEN_STREAMS, DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
        DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_REQUEST_READ_TIMEOUT,
        DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, MAX_MEMBERS_PER_MESSAGE, MAX_MEMBERS_PER_OBJECT,
        RmcpPeer, ServeError, Server, ServerBuilder, terminate_signal,
    };
}

/// The names most servers need: `use toolgate::prelude::*;`.
///
/// It brings the serde and schemars derives too; their expansions name the `serde` and
/// `schemars` crates, so a server depends on both (as the README's `Cargo.toml` shows).
pub mod prelude {
    pub use crate::server::ServeError;
    pub use crate::{
        Caller, Ctx, DomainPolicy, Exposition, Failure, FieldError, Instance, InstanceMut, LogLevel, Machine,
        Principal, Progress, Server, State, ToolError, Transaction, action, machine,
    };
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
}

/// What the macros' generated code refers to. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use toolgate_runtime::__private::*;
}

/// The README's examples, compiled as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// `machine!`'s examples, compiled as doctests here: its docs (`macros/src/machine.md`)
/// need this crate, which the macros' own crate cannot depend on.
#[cfg(doctest)]
#[doc = include_str!("../macros/src/machine.md")]
struct MachineDoctests;

/// The guide's examples (`docs/`), compiled as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../docs/instances-and-flows.md")]
struct InstancesAndFlowsDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/who-is-calling.md")]
struct WhoIsCallingDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/stores-and-replicas.md")]
struct StoresAndReplicasDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/protocol-eras-and-clients.md")]
struct ProtocolErasAndClientsDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/see-and-audit.md")]
struct SeeAndAuditDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/time.md")]
struct TimeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/exposition-and-cost.md")]
struct ExpositionAndCostDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/errors.md")]
struct ErrorsDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/handlers.md")]
struct HandlersDoctests;

//! # toolgate
//!
//! Build MCP (Model Context Protocol) servers in which the **server** — not the model's
//! good behaviour — stops the wrong tool call.
//!
//! You write async handlers and annotate them with [`#[action]`](macro@action). toolgate turns
//! them into MCP tools that are **gated by workflow state**: a tool bound to a state of a
//! [`machine!`] is absent from `tools/list` outside that state, and a client that calls it
//! anyway gets a structured `FORBIDDEN` result naming the tools it *can* call. A successful
//! call fires the tool's transition, commits it atomically per flow, and tells that client
//! (`notifications/tools/list_changed`).
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
//! The tool above is `invoice_discharge`; its input schema comes from `InvoiceRef`, its
//! output schema and `structuredContent` from `Discharged` plus the `state` field toolgate
//! adds (the machine's state after the call).
//!
//! ## What is checked, and when
//!
//! - **At compile time**: a `bind_state` or `transition` that names a state or event the
//!   machine does not have, or an event the bound state does not accept, is an error *at
//!   that literal*; so are invalid machines (unknown targets, unreachable states, a final
//!   state with transitions, …), a missing doc comment, a tool name without its domain
//!   prefix, unknown or repeated keys, and a handler that is not `async`.
//! - **At start-up** ([`ServerBuilder::build`]): duplicate tool names, schemas MCP cannot
//!   carry (inputs and outputs must be JSON objects), and bindings to machines loaded from
//!   XState JSON ([`Machine::from_xstate_json`]). Every problem is reported at once, with
//!   the source location of its `#[action]`.
//! - **Before every handler**: the arguments, against the tool's input schema compiled at
//!   start-up — every bad field at once in one `INVALID_ARGUMENT`, fields the tool does
//!   not take refused. The argument types in [`types`] (`DateTime` with a mandatory
//!   offset, `Date`, `TimeZone`, `Duration`, `Money` exact to its currency's minor unit,
//!   `Count<Persons, 1, 9>`) are judged there too, each in its own words.
//! - **On every call**: the gate, against the committed state of the instance the call
//!   names (keyed machines) or of its conversation. Calls that fire a transition are
//!   linearizable per instance and per flow — of 50 concurrent `invoice_discharge` calls
//!   on one approved invoice, from any number of sessions, exactly one handler runs and 49
//!   callers get `FORBIDDEN`. Waits for another call's lease are bounded (`FLOW_BUSY`) and
//!   handlers have deadlines (`TIMEOUT`, `#[action(timeout = "30s")]`).
//!
//! ## Instances and conversations
//!
//! A machine with a `key` has one instance per value of that argument (invoice `INV-7`),
//! shared by every session and connection: its actions must take the argument (a required
//! string or integer field of their input), and each call is gated on the instance it
//! names. A machine without a key, and the active intent domain, belong to a *flow* — one
//! conversation — identified by a signed state handle argument (`flow`), else by the
//! session or connection the server created, else (a sessionless MCP 2026-07-28 request)
//! as a new conversation whose handle a committing call returns. See the README's
//! "Instances and conversations" for the whole story, `--stateless`, and how a handler
//! stays safe when its deadline cuts it off.
//!
//! ## Intent lock: one active domain per flow
//!
//! Every action belongs to a domain (`bus`, `flight`, `invoice`) that prefixes its name.
//! A flow has one *active* domain; a call into another is refused with `DOMAIN_MISMATCH`
//! and a hint naming the exact `switch_domain` call to make if the user changed intent.
//! On a server with several domains toolgate generates that `switch_domain` tool
//! (`{domain, reason}` → `{domain, previous_domain, tools}`); a server with one domain has
//! it active from the start.
//!
//! Every domain tool's input schema gets a required `domain` property (`const` its
//! domain): the model restates its intent on each call, and a contradiction is refused
//! the same way. Every result — success or error — carries `domain`.
//!
//! ```no_run
//! use toolgate::prelude::*;
//! # #[tokio::main]
//! # async fn main() -> Result<(), toolgate::server::ServeError> {
//! Server::from_registry("travel")
//!     .domain_policy(DomainPolicy::Strict) // the default; or LockOnFirstUse, Off
//!     .describe_domain("bus", "long-distance coach trips between cities")
//!     .list_active_domain_only() // sessions list only the active domain's tools
//!     .run_cli()
//!     .await
//! # }
//! ```
//!
//! Tools that belong to no domain (help, …) are `#[action(global)]`: callable whatever
//! the active domain, named without a prefix — but never a bare generic verb.
//!
//! ## Handlers, application state and the call's context
//!
//! Every parameter of a handler is optional: the input (the tool's arguments, a
//! `Deserialize + JsonSchema` struct) comes first if there is one, then [`State<T>`] and
//! [`Ctx`] parameters in any order, `Ctx` at most once. `async fn help() -> …`,
//! `async fn view(input: InvoiceRef) -> …` and
//! `async fn post(input: Entry, ctx: Ctx, State(db): State<Db>) -> …` are all handlers.
//! **The first parameter is the input unless its type is written `Ctx` or `State<…>`**;
//! every later parameter is filled in by the call through [`FromCtx`].
//!
//! A server is given its application's state once — a database pool, an HTTP client,
//! configuration — with [`ServerBuilder::state`]; handlers receive it as [`State<T>`]
//! parameters. A handler that asks for a type the
//! server was not given stops the server at start-up, naming the handler and the type.
//! The context reports progress ([`Ctx::progress`] with a [`Progress`]), logs to the client
//! ([`Ctx::log`]), tells whether the client cancelled ([`Ctx::is_cancelled`]; a cancelled
//! handler is dropped and commits nothing), and reaches the client ([`Ctx::peer`]).
//!
//! ```standalone_crate
//! // (A crate of its own: the registry collects every action linked into the binary.)
//! use std::sync::{Arc, Mutex};
//! use toolgate::prelude::*;
//!
//! #[derive(Clone, Default)]
//! struct Ledger {
//!     entries: Arc<Mutex<Vec<i64>>>,
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Entry {
//!     /// The amount, in cents.
//!     amount: i64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Count {
//!     entries: usize,
//! }
//!
//! /// Post an entry to the ledger.
//! #[action(domain = "books")]
//! async fn post(input: Entry, State(ledger): State<Ledger>, ctx: Ctx) -> Result<Count, ToolError> {
//!     ctx.progress(Progress::new(1.0).total(1.0).message("posted")).await;
//!     let mut entries = ledger.entries.lock().unwrap();
//!     entries.push(input.amount);
//!     Ok(Count { entries: entries.len() })
//! }
//!
//! fn main() {
//!     assert!(Server::from_registry("books").state(Ledger::default()).build().is_ok());
//!     let missing = Server::from_registry("books").build().unwrap_err().to_string();
//!     assert!(missing.contains("add `.state(value)`"), "{missing}");
//! }
//! ```
//!
//! ## Calls that outlive their request
//!
//! `#[action(task = "optional")]` (or `"required"`) lets a call run as an MCP task for a
//! 2026-07-28 client that declares the Tasks extension: judged in its request like any
//! call, then stored, holding its instance (other changing calls get `TASK_RUNNING`) and
//! committing once at its end, or nothing. A question asked with
//! [`Ask::before_task`](crate::input::Ask::before_task) is asked within the request,
//! before the task exists. See the README's "Calls that outlive their request".
//!
//! ## Where `machine!` goes
//!
//! Anywhere in the crate: an action finds its machine by id from any module, whether the
//! machine is declared before or after it. A bound action whose machine no `machine!`
//! declares is a compile error at its `domain` (or `machine`) literal: "no machine with
//! this id is declared in this crate". For a machine loaded from XState JSON at start-up,
//! mark the action `startup_checked`. Two `machine!`s with one id are an error at each
//! action bound to that id, naming both declarations, and a server built from them refuses
//! to start, naming both.
//!
//! Actions are functions at module level: on a function inside an `impl` block or a
//! function body, `#[action]` says "`#[action]` goes on a function at module level"; move
//! it there and reach shared values through `State<T>`. (In a doctest, write `fn main`
//! yourself: rustdoc otherwise wraps the example, actions included, in one.)
//!
//! ## Actions in a library crate
//!
//! Actions register themselves at link time (through `inventory`). If they live in a
//! library crate that your binary never otherwise mentions, the linker drops that crate
//! and its tools vanish. Mention the crate once in the binary:
//!
//! ```text
//! use my_invoice_actions as _; // keeps the library's #[action]s linked
//! ```
//!
//! `fixtures/library-actions` in the repository shows both binaries, and its test proves
//! the anchored one lists the library's tools while the other lists none.
//!
//! ## Errors
//!
//! Refusals and handler failures are tool results with `isError: true` and a
//! `structuredContent` that always has a stable `code` and a `message`; see [`ToolError`].
//! A handler's own failure is a [`Failure`], which can say what to do next
//! ([`Failure::with_hint`]) and whether calling again helps ([`Failure::retry_after`],
//! [`Failure::never_retry`]). Unknown tools are JSON-RPC errors (`-32602`).

pub use toolgate_macros::{action, machine};
pub use toolgate_runtime::{
    ActionInput, ActionOutput, Ctx, DEFAULT_MAX_CONTEXT_BYTES, DomainPolicy, Failure, FieldError, FromCtx, Guard,
    Instance, InstanceContext, InstanceMut, LogLevel, Machine, Progress, Retry, Server, ServerBuilder, State,
    ToolError,
};
// Named by the diagnostics of generated code: exported here (hidden) so that rustc names
// them by their own names, not by a path through `__private`.
#[doc(hidden)]
pub use toolgate_runtime::{AtModuleLevel, IdChar, MachineDeclared, MachineId, ThisAction, declared_machine};
pub use toolgate_runtime::{completion, content, input, inspect, prompt, resource, telemetry};
pub use toolgate_runtime::{fsm, store, types};

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
        Connection, DEFAULT_HANDLER_TIMEOUT, DEFAULT_LEASE_WAIT, DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        DEFAULT_MAX_LISTEN_STREAMS, DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT, DEFAULT_MAX_REQUEST_BODY_BYTES,
        DEFAULT_MAX_SESSIONS, DEFAULT_REQUEST_READ_TIMEOUT, DEFAULT_SESSION_IDLE_TIMEOUT, MAX_MEMBERS_PER_MESSAGE,
        MAX_MEMBERS_PER_OBJECT, ServeError, Server, ServerBuilder,
    };
}

/// The names most servers need: `use toolgate::prelude::*;`.
///
/// It brings the serde and schemars derives too; their expansions name the `serde` and
/// `schemars` crates, so a server depends on both (as the README's `Cargo.toml` shows).
pub mod prelude {
    pub use crate::server::ServeError;
    pub use crate::{
        Ctx, DomainPolicy, Failure, FieldError, Instance, InstanceMut, LogLevel, Machine, Principal, Progress, Server,
        State, ToolError, action, machine,
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

//! The call engine: what judges, runs and commits a tool call, apart from the transport
//! that carried it. It owns the registry, the store, the flows, the rate limiters, the
//! confirmations, the application states handlers receive and the audit sinks; a
//! handler's [`Ctx`](crate::Ctx) holds it (weakly, as a `dyn CallEngine`), so what a handler reaches of
//! its instance (its history, a note on its transition) needs no server
//! ([`CallEngine`](crate::action::CallEngine)).
//!
//! `shared.rs` holds the [`Engine`] every call of one server shares, and its limits;
//! `source.rs` where a call comes from. `call.rs` runs one call around the admission
//! pipeline (`gate/`): the handler (`run.rs`), the commit, and the reply, with what a
//! session's focus (`focus.rs`) makes of it. `tasks.rs` runs calls as MCP tasks
//! (`running_tasks.rs`: those this process runs), `timers.rs` sweeps what time fires
//! (`unserved.rs`: what it leaves to other servers). `server/` keeps what is rmcp's: connections, transports, sessions, listening
//! streams, catalog requests.

mod call;
mod focus;
mod in_flight;
mod reply;
mod run;
mod running_tasks;
mod shared;
mod source;
mod stopping;
mod tasks;
mod timers;
mod unserved;

pub(crate) use focus::{SessionFocus, focus_states};
pub(crate) use in_flight::InFlight;
pub(crate) use reply::Reply;
use run::run_handler;
pub use running_tasks::{DEFAULT_TASK_TTL, DEFAULT_TASKS_PER_PRINCIPAL, DEFAULT_TASKS_PER_SERVER};
pub use shared::{DEFAULT_HANDLER_TIMEOUT, DEFAULT_LEASE_WAIT};
pub(crate) use shared::{Engine, Limits};
pub(crate) use source::CallSource;
pub(crate) use tasks::{Started, TaskCall, TaskError};
pub(crate) use timers::spawn_sweeper;

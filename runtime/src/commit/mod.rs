//! The commit: what a successful call writes, after the gate admitted it and its handler
//! ran — the flow, the instance's state and context, the history entry, the owner's
//! tenant, the user's transaction, the effects recorded — and the leases it settles.
//!
//! `write.rs` is the commit itself ([`Admitted::commit`](crate::gate::Admitted)),
//! `plan.rs` what it will write, read off the admitted call, `hooks.rs` the transactional
//! hooks it runs first, `pending.rs` a commit that waits for the handler's transaction,
//! `log.rs` what the log says of it, `task_mark.rs` the mark a running MCP task leaves on its instance.

mod hooks;
mod log;
mod pending;
mod plan;
mod task_mark;
mod write;

pub(crate) use write::Committed;

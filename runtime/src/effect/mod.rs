//! Effects: what a transition causes in the world — a payment provider called, an email
//! sent, a hold released — kept in an outbox and dispatched after the commit.
//!
//! A handler records an effect with [`Ctx::effect`](crate::Ctx::effect): its name and its
//! input (serde data) go into the instance's commit, with the transition that caused it
//! ([`Snapshot::effects`](crate::store::Snapshot::effects)), or nowhere if the call
//! commits nothing. The engine's sweep then dispatches each one to the function registered
//! under its name ([`ServerBuilder::effect`](crate::ServerBuilder::effect)):
//!
//! - **at least once**, each with one idempotency key ([`EffectCall::key`]) that every
//!   attempt carries, so a receiver that remembers the keys it has seen acts exactly once;
//! - **once across replicas and after a crash**: an attempt is claimed first, under the
//!   instance's lease, by committing the effect's next due time (the attempt's deadline);
//!   a process that dies while dispatching leaves it to be tried again at that time, by
//!   whoever sweeps, which records the attempt as cut off;
//! - **with retries and backoff**, then a **dead letter** after
//!   [`EffectPolicy::max_attempts`] attempts that ended, or
//!   [`EffectPolicy::max_cut_offs`] cut off: moved to
//!   [`Snapshot::dead_effects`](crate::store::Snapshot::dead_effects) with the reason in
//!   its `last_error`, logged and counted.

mod attempts;
mod call;
mod functions;
mod outbox;
mod policy;
mod record;
mod slots;

pub use call::{Attempt, EffectCall, EffectError, EffectFnPtr};
pub(crate) use functions::Effects;
pub(crate) use outbox::Outbox;
pub use policy::EffectPolicy;
pub(crate) use record::{CallEffects, record_move, recorded};
pub(crate) use slots::AttemptSlots;

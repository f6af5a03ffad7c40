//! The gate: which tools a flow may see and call, decided from a *view* — the flow's
//! snapshot (its conversation machines and active domain) with the state of each keyed
//! machine's instance in question laid over it (the instance a call names, or the one a
//! session focuses on).
//!
//! Listing and calling use the same rules, so the call path enforces what `tools/list`
//! shows whether or not the client refreshed its list. [`admit`] is the one place a call
//! is let in or refused, step by step in one order, and what it lets in is an [`Admitted`]
//! call (`admitted.rs`), which `commit/` commits; it reads and writes the store through
//! `crate::records`, and judges what a view lets a principal see and call through
//! `crate::visibility`, which `next` and every listing read too.

mod admitted;
mod guard_refusal;
mod idempotency;
mod naming;
mod pipeline;
mod rate_limit;
mod requester;

pub(crate) use admitted::{Admission, Admitted, Instance};
pub(crate) use idempotency::Idempotency;
pub(crate) use pipeline::{Judge, Refused, admit};
pub(crate) use rate_limit::{Limiter, OverLimit, Spent};
pub(crate) use requester::{Peer, Requester};

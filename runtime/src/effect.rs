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

pub(crate) mod attempts;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// One attempt at an effect, as its function receives it.
#[derive(Debug, Clone)]
pub struct EffectCall {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) instance: String,
    pub(crate) attempt: u32,
    pub(crate) input: Value,
}

impl EffectCall {
    /// The effect's registered name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its idempotency key: the same on every attempt, different for every effect any
    /// commit recorded. Give it to the receiver (an `Idempotency-Key` header, a unique
    /// column) so that a repeated attempt is recognized.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The instance whose commit recorded it (`Q-7`).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Which attempt this is, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The input as the handler recorded it, read as `T`.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, EffectError> {
        serde_json::from_value(self.input.clone())
            .map_err(|error| EffectError::new(format!("the input of effect `{}` does not read: {error}", self.name)))
    }
}

/// Why an attempt failed: it is tried again later, or dead-lettered after the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectError(String);

impl EffectError {
    /// A failure saying `why`.
    pub fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

impl std::fmt::Display for EffectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for EffectError {
    fn from(error: E) -> Self {
        Self(error.to_string())
    }
}

/// How often, and how far apart, an effect is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectPolicy {
    /// Attempts that end (in an error, or past `attempt_timeout`) before the effect is
    /// dead-lettered (default 5). Attempts cut off do not count here.
    pub max_attempts: u32,
    /// Attempts cut off — claimed, and not ended because the process running them stopped
    /// first — before the effect is dead-lettered (default 10; 0 is taken as 1). Counted
    /// apart, and allowed more, because a deploy or a lost machine is seldom the effect's
    /// fault; bounded, because an effect that stops every process running it would
    /// otherwise be tried forever (`docs/effects.md` says more).
    pub max_cut_offs: u32,
    /// The wait after the first failed attempt, doubled after each (default 1 s).
    pub first_backoff: Duration,
    /// The longest wait between attempts (default 5 minutes).
    pub max_backoff: Duration,
    /// How long one attempt may run; one that has not ended by then is tried again
    /// (default 30 s). It is also how long, and a second more, the claim of an attempt
    /// whose process died holds the effect from the others.
    pub attempt_timeout: Duration,
}

impl Default for EffectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            max_cut_offs: 10,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            attempt_timeout: Duration::from_secs(30),
        }
    }
}

impl EffectPolicy {
    /// The wait after the `attempts`-th failed attempt.
    pub(crate) fn backoff(&self, attempts: u32) -> Duration {
        let doubled = self.first_backoff.saturating_mul(1u32 << attempts.saturating_sub(1).min(20));
        doubled.min(self.max_backoff)
    }
}

/// One attempt under way: what an effect's function returns, boxed.
pub type Attempt = Pin<Box<dyn Future<Output = Result<(), EffectError>> + Send>>;

/// An effect function a `machine!`'s `entry`/`exit` names, as the machine's registration
/// holds it (generated code only).
#[doc(hidden)]
pub type EffectFnPtr = fn(EffectCall) -> Attempt;

/// A registered effect function.
pub(crate) type EffectFn = Arc<dyn Fn(EffectCall) -> Attempt + Send + Sync>;

/// The effects a server dispatches, by name, and how.
#[derive(Clone, Default)]
pub(crate) struct Effects {
    pub(crate) functions: HashMap<String, EffectFn>,
    pub(crate) policy: EffectPolicy,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.functions.keys().collect();
        names.sort();
        f.debug_struct("Effects").field("names", &names).field("policy", &self.policy).finish()
    }
}

impl Effects {
    /// Registers `function` under `name`.
    pub(crate) fn add<F, Fut>(&mut self, name: &str, function: F)
    where
        F: Fn(EffectCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), EffectError>> + Send + 'static,
    {
        let function: EffectFn = Arc::new(move |call| Box::pin(function(call)));
        self.functions.insert(name.to_string(), function);
    }

    /// Registers a machine's `entry`/`exit` function under `name`, unless the builder
    /// registered one of that name already.
    pub(crate) fn add_declared(&mut self, name: &str, function: EffectFnPtr) {
        if !self.functions.contains_key(name) {
            self.functions.insert(name.to_string(), Arc::new(function));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }
}

/// Appends to `next` the effects a move of `machine`'s instance at `key` runs — `from`'s
/// `exit` effects (none for an instance being created), then `to`'s `entry` effects — due
/// now, each keyed by the instance, `commit` and its place. Their input: the machine, the
/// instance's id, `from`, `to`, and the instance's context as committed with the move.
pub(crate) fn record_move(
    machine: &crate::Machine,
    key: &crate::store::StoreKey,
    from: Option<&str>,
    to: &str,
    commit: &str,
    next: &mut crate::store::Snapshot,
) {
    let spec = machine.spec();
    let state = |name: &str| spec.states.iter().find(|s| s.name == name);
    let exits = from.and_then(state).map(|s| s.exit.as_slice()).unwrap_or_default();
    let entries = state(to).map(|s| s.entry.as_slice()).unwrap_or_default();
    if exits.is_empty() && entries.is_empty() {
        return;
    }
    let instance = key.instance_parts().map(|(_, _, id)| id.to_string()).unwrap_or_default();
    let input = serde_json::json!({
        "machine": machine.id(), "instance": instance, "from": from, "to": to, "context": next.context,
    });
    let now = crate::store::now_ms();
    let moved = (exits.iter().enumerate().map(|(n, name)| ("exit", n, name)))
        .chain(entries.iter().enumerate().map(|(n, name)| ("entry", n, name)));
    for (kind, n, name) in moved {
        let effect_key = effect_key(key, commit, format_args!("{kind}:{name}#{n}"));
        next.effects.push(crate::store::PendingEffect::new(name.clone(), effect_key, input.clone(), now));
    }
}

/// The effects a call's handler recorded ([`Ctx::effect`](crate::Ctx::effect)), as the
/// commit of the instance at `key` keeps them: due now, each with its idempotency key.
pub(crate) fn recorded(
    key: &crate::store::StoreKey,
    commit: &str,
    effects: Vec<(String, Value)>,
) -> Vec<crate::store::PendingEffect> {
    let now = crate::store::now_ms();
    (effects.into_iter().enumerate())
        .map(|(n, (name, input))| {
            let effect_key = effect_key(key, commit, format_args!("{name}#{n}"));
            crate::store::PendingEffect::new(name, effect_key, input, now)
        })
        .collect()
}

/// An effect's idempotency key, the one format: the instance, the commit that recorded it
/// (its call id), and its place in that commit — `entry:notify#0` for a state's `entry`
/// or `exit` effect, `notify#1` for one its handler recorded. A dispatcher passes it on,
/// so an attempt repeated after a crash is recognised downstream.
fn effect_key(key: &crate::store::StoreKey, commit: &str, place: std::fmt::Arguments<'_>) -> String {
    format!("{key}/{commit}/{place}")
}

/// The effects one call's handler recorded, taken by its commit.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallEffects(Arc<std::sync::Mutex<Vec<(String, Value)>>>);

impl CallEffects {
    pub(crate) fn push(&self, name: String, input: Value) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push((name, input));
    }

    pub(crate) fn take(&self) -> Vec<(String, Value)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let policy = EffectPolicy { max_backoff: Duration::from_secs(5), ..EffectPolicy::default() };
        let waits: Vec<u64> = (1..=5).map(|n| policy.backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }
}

//! Recording effects: what a call's handler recorded ([`CallEffects`]), what a move
//! between states runs (`entry`, `exit`), and each one's idempotency key, in one format.

use std::sync::Arc;

use serde_json::Value;

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

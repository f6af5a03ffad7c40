//! The effects page's answer (`GET /api/effects`): the effects the instances the operator
//! may see are waiting to run, the next due first, with their attempts and why the last one
//! failed; and the effects dead-lettered lately (every attempt failed, or no function is
//! registered under their name), with their reason.
//!
//! Pending effects come from the store's index of deadlines
//! ([`FlowStore::due`](crate::store::FlowStore::due)) — an effect's next try is its
//! instance's deadline too — soonest first, as the timers do. Dead letters are listed from
//! the instances this process dead-lettered an effect of
//! ([`DeadLetterLog`](crate::telemetry::DeadLetterLog)), each one's dead letters read from
//! its record. Both are a page of a few instances' records: nothing scans the store.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Value, json};

use super::Console;
use super::tasks::{DEADLINES_READ, unavailable, visible};
use crate::auth::Principal;
use crate::store::{PendingEffect, StoreKey, now_ms, rfc3339};

/// How many pending effects the page lists.
const PENDING_SHOWN: usize = 20;
/// How many dead letters the page lists.
const DEAD_SHOWN: usize = 20;
/// How many of the instances with a dead letter lately are read to find the operator's.
const DEAD_INSTANCES_READ: usize = 64;

/// The operator's pending effects, the next due first, and dead letters, the latest first.
pub(super) async fn effects(
    State(console): State<Arc<Console>>,
    Extension(operator): Extension<Principal>,
) -> Response {
    let now = now_ms();
    let max_attempts = console.server.effect_policy().max_attempts;
    // Every deadline, however far: the index answers the soonest first.
    let Ok(deadlines) = console.server.store().due(i64::MAX as u64, DEADLINES_READ).await else {
        return unavailable();
    };
    let mut pending = Vec::new();
    for key in deadlines {
        if pending.len() >= PENDING_SHOWN {
            break;
        }
        let Ok(Some((machine, snapshot))) = visible(&console, &key, &operator).await else { continue };
        for effect in &snapshot.effects {
            let mut shown = effect_json(machine, &key, effect);
            shown["attempts_most"] = max_attempts.into();
            shown["due"] = rfc3339(effect.due_at_ms).into();
            shown["due_ms"] = effect.due_at_ms.into();
            shown["left_ms"] = effect.due_at_ms.saturating_sub(now).into();
            pending.push(shown);
        }
    }
    pending.sort_by_key(|effect| effect["due_ms"].as_u64());
    pending.truncate(PENDING_SHOWN);
    let mut dead = Vec::new();
    for key in console.server.dead_letters().latest(DEAD_INSTANCES_READ) {
        if dead.len() >= DEAD_SHOWN {
            break;
        }
        let Ok(Some((machine, snapshot))) = visible(&console, &key, &operator).await else { continue };
        // The latest dead letter of the instance first.
        dead.extend(snapshot.dead_effects.iter().rev().map(|effect| effect_json(machine, &key, effect)));
    }
    dead.truncate(DEAD_SHOWN);
    Json(json!({ "pending": pending, "dead": dead, "now_ms": now })).into_response()
}

/// What the page shows of `effect`, recorded by the instance of `machine` at `key`: never
/// its input (the instance's context, which the instance page shows to whoever looks it
/// up) nor its idempotency key (the store's key).
fn effect_json(machine: &crate::fsm::Machine, key: &StoreKey, effect: &PendingEffect) -> Value {
    let (_, _, id) = key.instance_parts().unwrap_or_default();
    json!({
        "machine": machine.id(), "key": id, "effect": effect.name,
        "attempts": effect.attempts, "reason": effect.last_error,
    })
}

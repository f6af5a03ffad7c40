//! The instance page's answer (`GET /api/instance?machine=…&key=…`): one instance as the
//! store holds it — its state, its context, its history as a timeline, the MCP task
//! holding it, its next due timer, and its effects pending and dead-lettered.
//!
//! The operator names the machine and the object's id; the server builds the key in the
//! operator's own tenant, so an instance of another tenant is never found. A
//! principal-owned machine's instance is judged by the one owner rule with the operator as
//! the principal ([`seen_by`](crate::visibility::seen_by)): its owner and a holder of the
//! machine's manager scopes see it; any other operator gets what a key never created gets.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::StatusCode;
use serde_json::json;

use super::Console;
use crate::auth::Principal;
use crate::store::{now_ms, rfc3339};

/// What the search form asks.
#[derive(serde::Deserialize)]
pub(super) struct Search {
    machine: String,
    key: String,
}

/// The instance `search` names, in the operator's tenant: 404 when there is none.
pub(super) async fn instance(
    State(console): State<Arc<Console>>,
    Extension(operator): Extension<Principal>,
    search: Result<Query<Search>, QueryRejection>,
) -> Response {
    let Ok(Query(search)) = search else { return super::malformed("name a machine and a key") };
    let registry = console.server.registry();
    let Some(machine) =
        registry.machines().find(|m| m.id() == search.machine && registry.instance_key_of(m.id()).is_some())
    else {
        return not_found("no keyed machine has this id");
    };
    let key = crate::visibility::instance_key(machine, &search.key, Some(&operator));
    let store = console.server.store();
    let Ok(snapshot) = store.load(&key).await else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": "the store cannot answer now" })))
            .into_response();
    };
    // The operator is a principal like any other: another principal's owned instance reads
    // as a key never created, unless the operator manages the machine's instances.
    let snapshot = crate::visibility::seen_by(machine, snapshot, Some(&operator));
    let now = now_ms();
    if snapshot.version == 0 || snapshot.is_expired(now) {
        return not_found("no instance has this key in your tenant");
    }
    let spec = machine.spec();
    let state = snapshot.state_of(machine.id(), machine.initial()).to_string();
    let history = match store.capabilities().history {
        Some(histories) => histories.history(&key).await.unwrap_or_default(),
        None => Vec::new(),
    };
    let timeline: Vec<_> = history
        .iter()
        .map(|entry| {
            let kind = if entry.tool.is_empty() { "timer" } else { "call" };
            json!({
                "time": entry.time, "principal": entry.principal, "tool": entry.tool, "event": entry.event,
                "from": entry.from, "to": entry.to, "kind": kind, "note": entry.note,
            })
        })
        .collect();
    let task = crate::task::holder(store.as_ref(), &snapshot).await.map(|(id, task)| {
        json!({ "id": id, "tool": task.tool, "started": rfc3339(task.created_at_ms),
                "running_ms": now.saturating_sub(task.created_at_ms) })
    });
    let timer = snapshot.due_at_ms.map(|due| {
        let to = spec.states.iter().find(|s| s.name == state).and_then(|s| s.after.first()).map(|a| a.target.clone());
        json!({ "due": rfc3339(due), "due_ms": due, "left_ms": due.saturating_sub(now), "to": to })
    });
    // Its outbox and dead letters: what each is, how its attempts went — how many were cut
    // off, and why the last failed or was cut off (on a dead letter, why it is one).
    let effects = |effects: &[crate::store::PendingEffect]| -> Vec<_> {
        (effects.iter())
            .map(|e| {
                json!({ "effect": e.name, "attempts": e.attempts, "cut_offs": e.cut_offs, "due": rfc3339(e.due_at_ms),
                        "reason": e.last_error })
            })
            .collect()
    };
    Json(json!({
        "effects": effects(&snapshot.effects), "dead_effects": effects(&snapshot.dead_effects),
        "machine": machine.id(), "key": search.key, "state": state, "final": spec.states.iter().any(|s| s.name == state && s.is_final),
        "context": snapshot.context, "timeline": timeline, "task": task, "timer": timer, "now_ms": now,
    }))
    .into_response()
}

fn not_found(why: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": why }))).into_response()
}

//! The tasks and timers page's answer (`GET /api/tasks`): the MCP tasks started lately in
//! the operator's tenant, running and recent, with their status and how long they ran; and
//! the timers due next on the instances the operator may see.
//!
//! What the operator may see of a principal-owned machine's instance is the one owner rule's
//! answer with the operator as the principal ([`visible`]): a timer on another principal's
//! instance is not listed, and a task holding one is listed without naming it.
//!
//! Tasks are listed from the tasks this process started ([`TaskLog`](crate::telemetry::TaskLog));
//! each one's status and times are read from its record in the store, as every replica
//! leaves it. Timers come from the store's index of deadlines
//! ([`FlowStore::due`](crate::store::FlowStore::due)), soonest first: nothing scans the
//! instances.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Value, json};

use super::Console;
use crate::auth::Principal;
use crate::store::{StoreKey, now_ms, rfc3339};
use crate::task::{TaskRecord, status_name};

/// How many tasks the page lists.
const TASKS_SHOWN: usize = 50;
/// How many timers the page lists.
const TIMERS_SHOWN: usize = 20;
/// How many deadlines are read from the store's index to find the operator's.
pub(super) const DEADLINES_READ: usize = 512;

/// The operator's tenant's tasks, newest first, and the timers due next.
pub(super) async fn tasks(State(console): State<Arc<Console>>, Extension(operator): Extension<Principal>) -> Response {
    let store = console.server.store();
    let tenant = operator.tenant().unwrap_or_default();
    let now = now_ms();
    let mut tasks = Vec::new();
    for started in console.server.task_log().of(tenant, TASKS_SHOWN) {
        let Ok(snapshot) = store.load(&StoreKey::task(&started.id)).await else { return unavailable() };
        // A task past its `ttlMs` is gone from the store, and from the page.
        let Some(record) = TaskRecord::read(&snapshot) else { continue };
        let Ok(names_instance) = may_name_its_instance(&console, &record, &operator).await else {
            return unavailable();
        };
        tasks.push(task(&started.id, started.principal, &record, names_instance, now));
    }
    // Every deadline, however far: the index answers the soonest first.
    let Ok(deadlines) = store.due(i64::MAX as u64, DEADLINES_READ).await else { return unavailable() };
    let mut timers = Vec::new();
    for key in deadlines {
        if timers.len() == TIMERS_SHOWN {
            break;
        }
        let Ok(Some(timer)) = timer(&console, &key, &operator, now).await else { continue };
        timers.push(timer);
    }
    Json(json!({ "tasks": tasks, "timers": timers, "now_ms": now })).into_response()
}

/// One task as the page shows it: running, it has run until now; ended, until its last
/// change. A running task whose process stopped saying so is shown as it will be reported.
/// The instance it holds is named only if `names_instance` ([`may_name_its_instance`]).
fn task(id: &str, principal: Option<String>, record: &TaskRecord, names_instance: bool, now: u64) -> Value {
    let running = record.is_running() && !record.lapsed(now);
    let status = if record.lapsed(now) { "failed (its process stopped)" } else { status_name(record.status) };
    let until = if running { now } else { record.updated_at_ms };
    let holds = record.holds.as_ref().filter(|_| names_instance);
    json!({
        "id": id, "tool": record.tool, "status": status, "running": running, "principal": principal,
        "started": rfc3339(record.created_at_ms), "duration_ms": until.saturating_sub(record.created_at_ms),
        "instance": holds.map(|(_, instance)| instance), "message": record.status_message,
        "machine": holds.and_then(|(key, _)| machine_of(key)),
    })
}

/// Whether the page may name the instance the task `record` holds to `operator`: always,
/// but for a principal-owned machine's instance the operator may not see ([`visible`]) —
/// another principal's, which the page leaves unnamed as the instance page would. `Err`
/// when the store cannot answer.
async fn may_name_its_instance(console: &Console, record: &TaskRecord, operator: &Principal) -> Result<bool, ()> {
    let Some((key, _)) = &record.holds else { return Ok(true) };
    let key = StoreKey::from_stored(key.clone());
    let owned = (key.instance_parts())
        .and_then(|(_, machine, _)| console.server.registry().machine(machine))
        .is_some_and(|machine| machine.is_principal_owned());
    if !owned {
        return Ok(true);
    }
    Ok(visible(console, &key, operator).await?.is_some())
}

/// The machine of the instance whose store key is `key`.
fn machine_of(key: &str) -> Option<String> {
    StoreKey::from_stored(key.to_string()).instance_parts().map(|(_, machine, _)| machine.to_string())
}

/// The timer on the instance at `key`, if the operator may see it ([`visible`]) and a
/// state's `after` is pending on it; `None` for a deadline that is only an effect's retry.
async fn timer(console: &Console, key: &StoreKey, operator: &Principal, now: u64) -> Result<Option<Value>, ()> {
    let Some((machine, snapshot)) = visible(console, key, operator).await? else { return Ok(None) };
    let Some(due) = snapshot.due_at_ms else { return Ok(None) };
    let state = snapshot.state_of(machine.id(), machine.initial());
    let spec = machine.spec();
    let to = spec.states.iter().find(|s| s.name == state).and_then(|s| s.after.first()).map(|a| a.target.clone());
    let (_, _, id) = key.instance_parts().unwrap_or_default();
    Ok(Some(json!({
        "machine": machine.id(), "key": id, "state": state, "to": to,
        "due": rfc3339(due), "due_ms": due, "left_ms": due.saturating_sub(now),
    })))
}

/// The instance at `key`, with its machine, if `operator` may see it: a tenant-scoped
/// machine's instance of the operator's tenant; a principal-owned machine's instance of
/// the operator's tenant that the one owner rule shows the operator
/// ([`seen_by`](crate::visibility::seen_by): its own, or any if it holds a manager scope of
/// the machine); or any other machine's. `None` for another tenant's, another principal's
/// the rule hides, a record that is not a live instance, or a machine this server lacks;
/// `Err` when the store cannot answer.
pub(super) async fn visible<'c>(
    console: &'c Console,
    key: &StoreKey,
    operator: &Principal,
) -> Result<Option<(&'c crate::fsm::Machine, crate::store::Snapshot)>, ()> {
    let Some((scope, machine_id, _)) = key.instance_parts() else { return Ok(None) };
    if scope.is_some_and(|scope| scope != operator.tenant().unwrap_or_default()) {
        return Ok(None);
    }
    let Some(machine) = console.server.registry().machine(machine_id) else { return Ok(None) };
    let snapshot = console.server.store().load(key).await.map_err(drop)?;
    let snapshot = crate::visibility::seen_by(machine, snapshot, Some(operator));
    if snapshot.version == 0 {
        return Ok(None);
    }
    Ok(Some((machine, snapshot)))
}

pub(super) fn unavailable() -> Response {
    (http::StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": "the store cannot answer now" }))).into_response()
}

//! The machines page's answer (`GET /api/machines`): each machine's states and, for a keyed
//! machine, how many of its instances are in each state, wait on a timer and are held by a
//! running task — in the operator's tenant, from the counters the store keeps as it commits
//! ([`Counts::instances`](crate::store::Counts::instances)): a page load
//! reads a few counters, never the instances.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;

use super::Console;
use crate::auth::Principal;
use crate::fsm::Machine;

/// Each machine: its id, its states (with the instances in each, for a keyed machine on a
/// store that counts them), and its instances' pending timers and running tasks.
pub(super) async fn machines(
    State(console): State<Arc<Console>>,
    Extension(operator): Extension<Principal>,
) -> Response {
    let registry = console.server.registry();
    let mut machines = Vec::new();
    for machine in registry.machines() {
        let spec = machine.spec();
        let keyed = registry.instance_key_of(machine.id()).is_some();
        let store = console.server.store();
        let counts = match (keyed, store.capabilities().counts) {
            (true, Some(counts)) => counts.instances(scope(machine, &operator), machine.id()).await.map(Some),
            _ => Ok(None),
        };
        let Ok(counts) = counts else {
            return (http::StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": "the store cannot answer now" })))
                .into_response();
        };
        let in_state = |state: &str| {
            let counts = counts.as_ref()?;
            // An instance whose record names no state is in the initial one.
            let unnamed =
                if spec.initial.as_deref() == Some(state) { counts.states.get("").copied().unwrap_or(0) } else { 0 };
            Some(counts.states.get(state).copied().unwrap_or(0) + unnamed)
        };
        let states: Vec<_> = (spec.states.iter())
            .map(|s| json!({ "name": s.name, "final": s.is_final, "instances": in_state(&s.name) }))
            .collect();
        let (timers, tasks) = counts.as_ref().map(|c| (c.timers, c.tasks)).unzip();
        machines.push(json!({
            "id": machine.id(), "initial": spec.initial, "states": states, "keyed": keyed,
            "owned": machine.is_principal_owned(),
            "timers": timers, "tasks": tasks,
        }));
    }
    Json(json!({ "machines": machines })).into_response()
}

/// Whose instances of `machine` the operator sees counted: a tenant-scoped or
/// principal-owned machine's, the operator's tenant's; any other machine's instances are
/// everyone's (`""`).
fn scope<'a>(machine: &Machine, operator: &'a Principal) -> &'a str {
    if machine.is_tenant_scoped() || machine.is_principal_owned() { operator.tenant().unwrap_or_default() } else { "" }
}

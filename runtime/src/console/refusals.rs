//! The refusals page's answer (`GET /api/refusals?minutes=…`): the calls refused in the
//! operator's tenant over the last minutes or hours, by code, tool and principal, and
//! minute by minute — how an operator sees an agent drifting. From the tally the engine
//! keeps in memory ([`Refusals`](crate::telemetry::Refusals)): this process's refusals.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::Console;
use crate::auth::Principal;

/// The window asked for.
#[derive(serde::Deserialize)]
pub(super) struct Window {
    /// How many minutes back, up to a day (60 unless told).
    #[serde(default = "an_hour")]
    minutes: u64,
}

fn an_hour() -> u64 {
    60
}

/// The operator's tenant's refusals over the window.
pub(super) async fn refusals(
    State(console): State<Arc<Console>>,
    Extension(operator): Extension<Principal>,
    window: Result<Query<Window>, QueryRejection>,
) -> Response {
    let Ok(Query(window)) = window else {
        return super::malformed("minutes is a whole number of minutes, up to a day (1440)");
    };
    let tenant = operator.tenant().unwrap_or_default();
    let now = crate::store::now_ms();
    let report = console.server.refusals().report(now, tenant, window.minutes);
    Json(serde_json::json!({ "minutes": window.minutes, "now_ms": now, "refusals": report })).into_response()
}

//! `/healthz` and `/readyz`: what an orchestrator or a load balancer asks a replica, on the
//! MCP listener beside `/mcp` and on the metrics listener.
//!
//! - **Liveness** (`/healthz`): 200 while the process serves.
//! - **Readiness** (`/readyz`): 200 only when the store answers a read — on Redis that read
//!   also checks the marker, so a Redis whose data vanished makes the replica not ready;
//!   on Postgres and SQLite it reads the migrated tables — and the server is not draining;
//!   else 503.
//!
//! They are answered before the `Host` check (kubelet and load balancers send the pod's
//! address, or no `Host`), need no token, and say nothing a stranger could use: `ok`,
//! `ready` or `not ready`.

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;

use super::Shared;
use super::accept::Probes;
use crate::store::StoreKey;

/// How long readiness waits for the store before it says "not ready".
const STORE_PATIENCE: Duration = Duration::from_secs(2);

/// The liveness path.
pub(crate) const HEALTHZ: &str = "/healthz";

/// The readiness path.
pub(crate) const READYZ: &str = "/readyz";

/// The probes of the server `shared` is, for its listeners' accept path.
pub(crate) fn probes(shared: Arc<Shared>) -> Probes {
    Arc::new(move |path| answering(&shared, path))
}

/// The answer to a request for `path`, if it is a probe's.
fn answering(shared: &Arc<Shared>, path: &str) -> Option<BoxFuture<'static, Response>> {
    match path {
        HEALTHZ => Some(Box::pin(async { answer(http::StatusCode::OK, "ok\n") })),
        READYZ => {
            let shared = shared.clone();
            Some(Box::pin(async move {
                if ready(&shared).await {
                    answer(http::StatusCode::OK, "ready\n")
                } else {
                    answer(http::StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                }
            }))
        }
        _ => None,
    }
}

/// Whether the server is not draining and its store answers a read in time.
async fn ready(shared: &Shared) -> bool {
    if shared.lifecycle.is_draining() {
        return false;
    }
    let probe = StoreKey::readiness_probe();
    let read = shared.engine.store.load(&probe);
    match tokio::time::timeout(STORE_PATIENCE, read).await {
        Ok(Ok(_)) => true,
        Ok(Err(error)) => {
            tracing::debug!(%error, "not ready: the store refused a read");
            false
        }
        Err(_) => {
            tracing::debug!("not ready: the store did not answer in time");
            false
        }
    }
}

fn answer(status: http::StatusCode, body: &'static str) -> Response {
    let headers =
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8"), (http::header::CACHE_CONTROL, "no-store")];
    (status, headers, body).into_response()
}

//! How the engine stops with its server ([`Engine::stop`]): the sweeper stops claiming, the
//! calls in flight and the tasks are waited for up to a deadline, a task still running then
//! is given up (reported failed, nothing committed, its instance freed at once), the
//! effects' attempts end, and the store finishes what it has in flight (leases being
//! released) and closes.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Engine;

/// How long a given-up task may take to write that it failed and free its instance.
const GIVING_UP: Duration = Duration::from_secs(5);

impl Engine {
    /// Waits until the calls in flight have ended, or `deadline`; whether they all did.
    pub(crate) async fn calls_ended(&self, deadline: Instant) -> bool {
        self.in_flight.calls.close();
        tokio::time::timeout_at(deadline.into(), self.in_flight.calls.wait()).await.is_ok()
    }

    /// Stops what runs in the background: no more sweeps; tasks finish by `deadline` or
    /// are given up; the effects' attempts end (each within its own timeout); then the
    /// store releases what it still holds and closes.
    pub(crate) async fn stop(&self, deadline: Instant) {
        self.in_flight.stopping.cancel();
        let tasks = &self.in_flight.tasks;
        tasks.close();
        if tokio::time::timeout_at(deadline.into(), tasks.wait()).await.is_err() {
            let running: Vec<_> = self.running.lock().values().map(|task| task.cancel.clone()).collect();
            tracing::warn!(tasks = running.len(), "giving up the tasks still running when the shutdown grace ran out");
            self.in_flight.giving_up.store(true, Ordering::Release);
            for cancel in running {
                cancel.cancel();
            }
            if tokio::time::timeout(GIVING_UP, tasks.wait()).await.is_err() {
                tracing::warn!("tasks did not end after they were given up; they lapse on their own");
            }
        }
        let attempts = &self.effects.attempts;
        attempts.close();
        let patience = self.effects.policy.attempt_timeout + GIVING_UP;
        if tokio::time::timeout(patience, attempts.wait()).await.is_err() {
            tracing::warn!("effects' attempts still ran at shutdown; their claims lapse on their own");
        }
        if let Err(error) = self.store.close().await {
            tracing::warn!(%error, "the store did not close cleanly; the leases it held lapse on their own");
        }
    }
}

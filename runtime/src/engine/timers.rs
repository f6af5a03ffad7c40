//! Time on the engine: the transitions `after` fires. What is due is applied on every
//! read of an instance (a call's gate included), so it is right without any scheduler;
//! the sweeper here also commits it at about its due time, so that the audit sinks, the
//! history, and every listening session hear of it. Each transition is committed once,
//! across replicas: under the instance's lease, by compare-and-set over what was read.

use std::sync::Weak;
use std::time::Duration;

use super::Engine;
use crate::error::ToolError;
use crate::gate::TimerCommit;
use crate::store::{StoreKey, now_ms};
use crate::telemetry;

/// How often the sweeper asks the store what is due.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// The most instances one sweep commits (the rest wait for the next).
const SWEEP_BATCH: usize = 256;

/// How long a sweep waits for an instance a call holds: that call settles it itself.
const SWEEP_LEASE_WAIT: Duration = Duration::from_millis(50);

impl Engine {
    /// One sweep: commits what is due on each instance the store names. Returns how many
    /// instances it looked at.
    pub(crate) async fn sweep(&self) -> usize {
        let keys = match self.store.due(now_ms(), SWEEP_BATCH).await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "cannot read which instances are due");
                return 0;
            }
        };
        for key in &keys {
            if let Err(error) = self.settle(key).await {
                tracing::warn!(on = %key, %error, "cannot commit what time made due");
            }
        }
        keys.len()
    }

    /// Commits what is due on the instance at `key`, under its lease (skipped while a call
    /// holds it), and tells the store's index of deadlines where it stands now.
    async fn settle(&self, key: &StoreKey) -> Result<(), ToolError> {
        let machine = key.instance_parts().and_then(|(_, machine, _)| self.registry.machine(machine));
        let Some(machine) = machine else {
            // Not an instance of a machine this server has (any more).
            return self.store.due_changed(key, None).await.map_err(|e| ToolError::store_unavailable(e, 1_000));
        };
        let Some(lease) = crate::wait::within(SWEEP_LEASE_WAIT, self.store.lease(key)).await else { return Ok(()) };
        let lease = lease.map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        let records = self.records();
        let before = records.load(key).await?;
        let retention = self.registry.history().retention;
        let after = records.settle(machine, key, before, &lease, retention).await?;
        drop(lease);
        self.store.due_changed(key, after.due_at_ms).await.map_err(|e| ToolError::store_unavailable(e, 1_000))
    }

    /// Hands a transition time fired to the audit sinks and the metrics.
    pub(crate) fn record_timer(&self, commit: &TimerCommit) {
        telemetry::record_transition(&commit.machine, "after");
        if self.audit_sinks.is_empty() {
            return;
        }
        let record = telemetry::AuditRecord {
            machine: commit.machine.clone(),
            instance: commit.key.instance_parts().map(|(_, _, id)| id.to_string()),
            flow: None,
            transition: commit.entry.clone(),
        };
        for sink in &self.audit_sinks {
            sink.record(&record);
        }
    }
}

/// Sweeps every [`SWEEP_EVERY`] for as long as the engine lives, on the current Tokio
/// runtime (an engine built outside one applies what is due on reads only).
pub(crate) fn spawn_sweeper(engine: Weak<Engine>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    // Only a server with a machine that has `after` sweeps.
    let timed = engine
        .upgrade()
        .is_some_and(|e| e.registry.machines().any(|m| m.spec().states.iter().any(|s| !s.after.is_empty())));
    if !timed {
        return;
    }
    runtime.spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(engine) = engine.upgrade() else { return };
            engine.sweep().await;
        }
    });
}

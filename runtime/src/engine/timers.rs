//! Time on the engine: the transitions `after` fires. What is due is applied on every
//! read of an instance (a call's gate included), so it is right without any scheduler;
//! the sweeper here also commits it at about its due time, so that the audit sinks, the
//! history, and every listening session hear of it. Each transition is committed once,
//! across replicas: under the instance's lease, by compare-and-set over what was read.
//! The same sweep hands each instance it holds to the effects' outbox
//! (`crate::effect::Outbox`), which dispatches what commits recorded.

use std::sync::Weak;
use std::time::Duration;

use super::Engine;
use super::unserved::UNSERVED_AFTER;
use crate::effect::Outbox;
use crate::error::ToolError;
use crate::records::TimerCommit;
use crate::store::{Hold, Step, StoreKey, now_ms};
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
        let now = now_ms();
        let left = &self.left_to_their_servers;
        let keys = match self.store.due(now, SWEEP_BATCH + left.len()).await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "cannot read which instances are due");
                return 0;
            }
        };
        let mut looked_at = 0;
        for key in keys.iter().filter(|key| !left.skips(key, now)) {
            looked_at += 1;
            if let Err(error) = self.settle(key).await {
                tracing::warn!(on = %key, %error, "cannot commit what time made due");
            }
        }
        left.keep_only(&keys.iter().collect());
        looked_at
    }

    /// Commits what is due on the instance at `key`, under its lease (skipped while a call
    /// holds it), and tells the store's index of deadlines where it stands now.
    async fn settle(&self, key: &StoreKey) -> Result<(), ToolError> {
        let machine = key.instance_parts().and_then(|(_, machine, _)| self.registry.machine(machine));
        let Some(machine) = machine else { return self.leave_to_its_server(key).await };
        let Some(step) = crate::wait::within(SWEEP_LEASE_WAIT, self.store.begin(key, Hold::Wait)).await else {
            return Ok(());
        };
        let (lease, before) = step.and_then(Step::leased).map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        let records = self.records();
        let after = records.settle(machine, key, before, &lease).await?;
        let outbox = self.outbox();
        let (after, claimed) = outbox.claim(key, after, &lease).await?;
        drop(lease);
        for effect in claimed {
            outbox.dispatch(key.clone(), effect);
        }
        self.store.due_changed(key, after.wake_at_ms()).await.map_err(|e| ToolError::store_unavailable(e, 1_000))
    }

    /// What is due on an instance of a machine this server lacks is left to a server that
    /// has it (servers of different machines may share a store), and remembered so that
    /// the next sweeps skip it unread ([`LeftToTheirServers`]): its place among the
    /// deadlines is cleared only once it is [`UNSERVED_AFTER`] overdue, when no server has
    /// its machine any more.
    async fn leave_to_its_server(&self, key: &StoreKey) -> Result<(), ToolError> {
        let unavailable = |e| ToolError::store_unavailable(e, 1_000);
        let record = self.store.load(key).await.map_err(unavailable)?;
        let unserved = record.wake_at_ms().map(|at| at.saturating_add(UNSERVED_AFTER.as_millis() as u64));
        match unserved {
            Some(at) if at > now_ms() => {
                self.left_to_their_servers.remember(key, Some(at));
                Ok(())
            }
            _ => {
                self.left_to_their_servers.remember(key, None);
                self.store.due_changed(key, None).await.map_err(unavailable)
            }
        }
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
    // Only a server with a machine that has `after`, or with effects, sweeps.
    let timed = engine.upgrade().is_some_and(|e| {
        !e.effects.is_empty() || e.registry.machines().any(|m| m.spec().states.iter().any(|s| !s.after.is_empty()))
    });
    if !timed {
        return;
    }
    let Some(stopping) = engine.upgrade().map(|e| e.in_flight.stopping.clone()) else { return };
    runtime.spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = stopping.cancelled() => return,
            }
            let Some(engine) = engine.upgrade() else { return };
            engine.sweep().await;
        }
    });
}

impl Engine {
    /// The effects' outbox, over this engine's store.
    fn outbox(&self) -> Outbox {
        Outbox {
            store: self.store.clone(),
            effects: self.effects.clone(),
            dead_letters: self.dead_letters.clone(),
            lease_wait: self.limits.lease_wait,
        }
    }
}

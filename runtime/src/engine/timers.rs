//! Time on the engine: the transitions `after` fires. What is due is applied on every
//! read of an instance (a call's gate included), so it is right without any scheduler;
//! the sweeper here also commits it at about its due time, so that the audit sinks, the
//! history, and every listening session hear of it. Each transition is committed once,
//! across replicas: under the instance's lease, by compare-and-set over what was read.
//! The same sweep dispatches the effects commits recorded (`crate::effect`): each attempt
//! claimed under the lease first, run outside it, and its end committed under it again.

use std::sync::Weak;
use std::time::Duration;

use super::Engine;
use super::unserved::UNSERVED_AFTER;
use crate::effect::attempts::{self, Next};
use crate::effect::{EffectCall, EffectError};
use crate::error::ToolError;
use crate::gate::TimerCommit;
use crate::store::{FlowLease, PendingEffect, Snapshot, StoreKey, now_ms};
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
        let Some(lease) = crate::wait::within(SWEEP_LEASE_WAIT, self.store.lease(key)).await else { return Ok(()) };
        let lease = lease.map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        let records = self.records();
        let before = records.load(key).await?;
        let retention = self.registry.history().retention;
        let after = records.settle(machine, key, before, &lease, retention).await?;
        let (after, claimed) = self.claim_effects(key, after, &lease).await?;
        drop(lease);
        for effect in claimed {
            self.dispatch(key.clone(), effect);
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

    /// Claims the instance's due effects, under its lease: each one's attempt counted and
    /// its next due time set to the attempt's deadline, committed before any runs — so a
    /// process that dies while dispatching leaves it to be tried again then, by whoever
    /// sweeps, which records the attempt it finds still claimed as cut off. One out of
    /// attempts or of cut-offs, or whose function this server lacks, is dead-lettered
    /// (`effect::attempts`).
    async fn claim_effects(
        &self,
        key: &StoreKey,
        before: Snapshot,
        lease: &FlowLease,
    ) -> Result<(Snapshot, Vec<PendingEffect>), ToolError> {
        let now = now_ms();
        if !before.effects.iter().any(|effect| effect.due_at_ms <= now) {
            return Ok((before, Vec::new()));
        }
        let policy = self.effects.policy;
        let mut next = before.next();
        let (mut claimed, mut dead) = (Vec::new(), Vec::new());
        next.effects.retain_mut(|effect| {
            if effect.due_at_ms > now {
                return true;
            }
            let cut_off = effect.claimed_at_ms.is_some();
            let next = attempts::claim(effect, &policy, self.effects.has(&effect.name), now);
            if cut_off {
                telemetry::record_effect(&effect.name, "cut_off");
                let why = effect.last_error.as_deref().unwrap_or_default();
                tracing::warn!(on = %key, effect = %effect.key, cut_offs = effect.cut_offs, why, "an effect's attempt was cut off");
            }
            match next {
                Next::Run => claimed.push(effect.clone()),
                Next::Dead => dead.push(effect.clone()),
                Next::Wait => {}
            }
            next != Next::Dead
        });
        for effect in &dead {
            self.dead_lettered(key, effect);
        }
        next.dead_effects.extend(dead);
        let after = self.records().commit(key, &before, next, Some(lease)).await?;
        Ok((after, claimed))
    }

    /// Runs one claimed attempt of `effect` outside the lease, then commits how it ended.
    fn dispatch(&self, key: StoreKey, effect: PendingEffect) {
        let (Some(engine), Some(function)) = (self.this.upgrade(), self.effects.functions.get(&effect.name).cloned())
        else {
            return;
        };
        let instance = key.instance_parts().map(|(_, _, id)| id.to_string()).unwrap_or_default();
        let call = EffectCall {
            name: effect.name.clone(),
            key: effect.key.clone(),
            instance,
            attempt: effect.attempts,
            input: effect.input.clone(),
        };
        let timeout = self.effects.policy.attempt_timeout;
        tokio::spawn(async move {
            let ended = match tokio::time::timeout(timeout, function(call)).await {
                Ok(ended) => ended,
                Err(_) => Err(EffectError::new(format!("the attempt did not end within {} ms", timeout.as_millis()))),
            };
            if let Err(error) = engine.effect_ended(&key, &effect, ended).await {
                // Claimed, its end unrecorded: at the attempt's deadline a sweep records it as
                // cut off, and tries it again.
                tracing::warn!(on = %key, effect = %effect.key, %error, "cannot record how an effect's attempt ended");
            }
        });
    }

    /// Commits how an attempt of `effect` ended: done (it leaves the outbox), or failed
    /// (tried again after the backoff, or dead-lettered after the last attempt).
    async fn effect_ended(
        &self,
        key: &StoreKey,
        effect: &PendingEffect,
        ended: Result<(), EffectError>,
    ) -> Result<(), ToolError> {
        let records = self.records();
        let lease = records.lease(key, "instance").await?;
        let before = records.load(key).await?;
        let Some(place) = before.effects.iter().position(|e| e.key == effect.key && e.attempts == effect.attempts)
        else {
            // This attempt outlived its deadline: a sweep recorded it as cut off meanwhile.
            return Ok(());
        };
        let mut next = before.next();
        let mut current = next.effects.remove(place);
        match ended {
            Ok(()) => {
                telemetry::record_effect(&current.name, "done");
                tracing::info!(on = %key, effect = %current.key, attempt = current.attempts, "effect dispatched");
            }
            Err(error) => {
                tracing::warn!(on = %key, effect = %current.key, attempt = current.attempts, %error, "an effect's attempt failed");
                telemetry::record_effect(&current.name, "failed");
                if attempts::failed(&mut current, &self.effects.policy, &error, now_ms()) == Next::Dead {
                    self.dead_lettered(key, &current);
                    next.dead_effects.push(current);
                } else {
                    next.effects.insert(place, current);
                }
            }
        }
        let after = records.commit(key, &before, next, Some(&lease)).await?;
        drop(lease);
        self.store.due_changed(key, after.wake_at_ms()).await.map_err(|e| ToolError::store_unavailable(e, 1_000))
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

impl Engine {
    /// Logs and counts an effect that will not be tried again, and remembers its instance
    /// for the console's effects page.
    fn dead_lettered(&self, key: &StoreKey, effect: &PendingEffect) {
        self.dead_letters.record(key);
        telemetry::record_effect(&effect.name, "dead");
        tracing::error!(
            on = %key,
            effect = %effect.key,
            attempts = effect.attempts,
            error = effect.last_error.as_deref().unwrap_or("unknown"),
            "an effect was dead-lettered: it will not be tried again"
        );
    }
}

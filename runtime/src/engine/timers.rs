//! Time on the engine: the transitions `after` fires. What is due is applied on every
//! read of an instance (a call's gate included), so it is right without any scheduler;
//! the sweeper here also commits it at about its due time, so that the audit sinks, the
//! history, and every listening session hear of it. Each transition is committed once,
//! across replicas: under the instance's lease, by compare-and-set over what was read.
//! The same sweep hands each instance it holds to the effects' outbox
//! (`crate::effect::Outbox`), which dispatches what commits recorded.

use std::sync::Weak;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;

use super::Engine;
use super::unserved::UNSERVED_AFTER;
use crate::effect::Outbox;
use crate::error::ToolError;
use crate::records::TimerCommit;
use crate::store::{Hold, Step, StoreKey, now_ms};
use crate::telemetry;

/// How often the sweeper asks the store what is due.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// How many due instances a sweep asks the store for: the pool it picks from.
const SWEEP_BATCH: usize = 256;

/// The most instances one sweep visits, picked at random from what the store named: few
/// enough that the list is fresh while it is worked through. Replicas read the same list;
/// each working through all of it visited every instance once per replica, finding all but
/// one visit's work done (measured: 20,000 due at once on three Postgres replicas made
/// ~1.8 such visits a timer, each a lease, a read and an index write). Picking this many
/// of 256, one replica's pick is among another's one time in eight. At 100,000 due at once
/// on three Postgres replicas, 104.7 s became 41.0 s, and the wasted visits' index writes
/// 141,747 became 9,176 (`benches/scale`, BENCHMARKS.md); reading eight times as often
/// costs little once each read takes a millisecond (on Postgres, once no statement of
/// toolgate's is JIT-compiled).
const SWEEP_TAKE: usize = 4 * SWEEP_AT_ONCE;

/// How many instances a sweep settles at once: enough that a store's group commit holds
/// several of them (one sync for several), so that a hundred thousand due at once are
/// settled at about the pace of calls sent by many clients, not one at a time; few enough
/// that the calls served meanwhile keep most of their share. Measured on SQLite with
/// 20,000 due at once (`benches/scale`, BENCHMARKS.md): 2 at once took 20.6 s, 8 took
/// 11.4 s, 32 took 7.8 s, while the other calls' p99 went from 12 to 18 to 37 ms. The
/// effects' attempts the sweeps claim run apart, with places of their own
/// (`crate::effect::AttemptSlots`). While this server serves calls, a sweep settles one at
/// a time (`crate::calls_first`).
const SWEEP_AT_ONCE: usize = 8;

/// How long a sweep waits for an instance a call holds: that call settles it itself.
const SWEEP_LEASE_WAIT: Duration = Duration::from_millis(50);

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Swept {
    /// How many instances the store named as due (and this server may settle).
    pub(crate) named: usize,
    /// How many of them the sweep visited.
    pub(crate) visited: usize,
    /// How many of those the sweep settled.
    pub(crate) settled: usize,
}

impl Swept {
    /// Whether more is due than this sweep visited and it made progress: the next sweep
    /// starts at once rather than at the next tick.
    fn more_at_once(self) -> bool {
        self.named > self.visited && self.settled > 0
    }
}

impl Engine {
    /// One sweep: commits what is due on up to [`SWEEP_TAKE`] of the instances the store
    /// names, picked at random, [`SWEEP_AT_ONCE`] at a time (one at a time while calls are
    /// in flight: calls first). Returns how many instances
    /// the store named, how many this sweep visited, and how many of those it settled (the
    /// others a call or another replica held, could not be read, or are still due).
    pub(crate) async fn sweep(&self) -> Swept {
        let now = now_ms();
        let left = &self.left_to_their_servers;
        let keys = match self.store.due(now, SWEEP_BATCH + left.len()).await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "cannot read which instances are due");
                return Swept::default();
            }
        };
        let mut due: Vec<&StoreKey> = keys.iter().filter(|key| !left.skips(key, now)).collect();
        // Replicas that read the same due instances pick different ones, so that they
        // settle different ones instead of queueing for the same leases or visiting what
        // another has settled since the list was read.
        fastrand::shuffle(&mut due);
        let named = due.len();
        due.truncate(SWEEP_TAKE);
        let visited = due.len();
        let settled = AtomicUsize::new(0);
        let counted = &settled;
        futures_util::stream::iter(due)
            .for_each_concurrent(SWEEP_AT_ONCE, |key| async move {
                let _lane = self.in_flight.calls_first.lane().await;
                match self.settle(key).await {
                    Ok(true) => {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(false) => {}
                    Err(error) => tracing::warn!(on = %key, %error, "cannot commit what time made due"),
                }
            })
            .await;
        left.keep_only(&keys.iter().collect());
        Swept { named, visited, settled: settled.into_inner() }
    }

    /// Sweeps until a sweep leaves nothing it could settle now: again at once while
    /// sweeps make progress on more than they visit, and again as soon as an attempt's
    /// place frees while every place was taken with effects still due — so that a backlog
    /// drains at the pace its attempts end, not 32 instances a tick.
    async fn sweep_while_due(&self, stopping: &tokio_util::sync::CancellationToken) {
        while !stopping.is_cancelled() {
            let swept = self.sweep().await;
            if swept.more_at_once() {
                continue;
            }
            let slots = &self.effects.slots;
            let waiting_for_places = swept.named > swept.settled && slots.all_taken();
            if !waiting_for_places || crate::wait::within(SWEEP_EVERY, slots.one_free()).await.is_none() {
                return;
            }
        }
    }

    /// Commits what is due on the instance at `key`, under its lease (or tells the store's
    /// index of deadlines that it named one not due); `false` if it was skipped (held by
    /// a call, which settles it itself, or by another replica's sweep) or is still due.
    async fn settle(&self, key: &StoreKey) -> Result<bool, ToolError> {
        let machine = key.instance_parts().and_then(|(_, machine, _)| self.registry.machine(machine));
        let Some(machine) = machine else { return self.leave_to_its_server(key).await.map(|()| false) };
        let Some(step) = crate::wait::within(SWEEP_LEASE_WAIT, self.store.begin(key, Hold::Wait)).await else {
            return Ok(false);
        };
        let (lease, before) = step.and_then(Step::leased).map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        let read = before.version;
        let (records, outbox) = (self.records(), self.outbox());
        // The effects the moves recorded are claimed in the commit that makes the moves.
        let claim = |next: &mut crate::store::Snapshot| outbox.claim_into(key, next);
        let (after, claimed) = match records.settle_then(machine, key, before, &lease, claim).await? {
            (after, Some(claims)) => (after, outbox.committed(key, claims)),
            // Nothing moved: what is due is effects alone (a retry, or one a call recorded).
            (after, None) => outbox.claim(key, after, &lease).await?,
        };
        drop(lease);
        let wake_at = after.wake_at_ms();
        // Every commit indexes the deadline it writes, in its own atomic step. Told only
        // when nothing was committed and the index named a record not due (one expired,
        // say): never after a commit, whose newer deadline an older one would cover.
        let stale = after.version == read && wake_at.is_none_or(|at| at > now_ms());
        let told = match stale {
            true => self.store.due_changed(key, wake_at).await,
            false => Ok(()),
        };
        for attempt in claimed {
            outbox.dispatch(key.clone(), attempt);
        }
        told.map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        // Settled only if it is no longer due: one that stays due whatever a sweep does
        // must not keep the sweeps going at once.
        Ok(wake_at.is_none_or(|at| at > now_ms()))
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
            engine.sweep_while_due(&stopping).await;
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
            calls_first: self.in_flight.calls_first.clone(),
        }
    }
}

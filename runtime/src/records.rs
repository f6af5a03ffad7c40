//! [`Records`]: the store as one call sees it — its flow and its instance — for the gate
//! that admits the call and the commit that writes it: bounded lease waits (`FLOW_BUSY`),
//! loads, commits (an instance's with its history entry), a handle flow's expiry, the
//! transitions time made due, and the counters ids are minted from.

use std::time::Duration;

use crate::action::TransactionSlot;
use crate::error::{ToolError, store_failure};
use crate::flow::{FlowRef, Flows};
use crate::fsm::Machine;
use crate::hook::{self, Hook, Hooks, Moved};
use crate::store::{
    FlowLease, FlowStore, HistoryEntry, HistoryRetention, Hold, RecordWrite, Snapshot, Step, StoreError, StoreKey,
    now_ms,
};

/// The store as one call sees it.
#[derive(Clone, Copy)]
pub(crate) struct Records<'a> {
    pub(crate) store: &'a dyn FlowStore,
    /// The same store, shared: what a transition's transactional hooks write through.
    pub(crate) shared: &'a std::sync::Arc<dyn FlowStore>,
    /// The tables of yours the server creates before the first statement.
    pub(crate) tables: Option<&'a std::sync::Arc<crate::store::Tables>>,
    /// The transactional hooks time's transitions run.
    pub(crate) hooks: &'a Hooks,
    /// How much of an instance's history the transitions time fires keep.
    pub(crate) retention: HistoryRetention,
    /// How long a transitioning call waits for a lease before `FLOW_BUSY`.
    pub(crate) lease_wait: Duration,
    pub(crate) flows: &'a Flows,
    /// Where the transitions time fires are told once committed (the engine hands them to
    /// its audit sinks and the server to its sessions and listeners).
    pub(crate) timers: &'a tokio::sync::broadcast::Sender<TimerCommit>,
    /// One minting at a time per counter in this process ([`Records::mint`]).
    pub(crate) minting: &'a MintLocks,
}

/// Locks that let one call of this process at a time draw from a key counter (striped by
/// the counter's key). A counter is one record every creation of its machine
/// compare-and-sets: with every creation in flight racing for it, each round lets one win
/// and sends the rest round again, so a burst of creations costs rounds by the square of
/// its size, and on a store whose round trips are batched (Postgres) an open-loop load of
/// creations piled up until calls went unanswered (the rolling-restart check at 100
/// calls/s). Serialized here, only one call per replica races.
#[derive(Debug, Default)]
pub(crate) struct MintLocks([tokio::sync::Mutex<()>; 16]);

impl MintLocks {
    fn of(&self, counter: &StoreKey) -> &tokio::sync::Mutex<()> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        counter.as_str().hash(&mut hasher);
        &self.0[hasher.finish() as usize % self.0.len()]
    }
}

/// A transition time fired, committed: on which instance, of which machine.
#[derive(Debug, Clone)]
pub(crate) struct TimerCommit {
    pub(crate) key: StoreKey,
    pub(crate) machine: String,
    pub(crate) entry: HistoryEntry,
}

use crate::telemetry;

impl Records<'_> {
    /// Begins a step of `key` (`what`: `flow` or `instance`): its lease, waited for at most
    /// `lease_wait` (then `FLOW_BUSY`), and the record as committed once it is held.
    pub(crate) async fn begin(&self, key: &StoreKey, what: &'static str) -> Result<(FlowLease, Snapshot), ToolError> {
        let started = telemetry::store_clock();
        let begun = crate::wait::within(self.lease_wait, self.store.begin(key, Hold::Wait)).await;
        telemetry::record_store("lease", started);
        match begun {
            Some(step) => step.and_then(Step::leased).map_err(store_failure),
            None => Err(ToolError::flow_busy(what, self.lease_wait.as_millis().max(1) as u64)),
        }
    }

    /// The record as committed, and its lease if it is free now (never waited for).
    pub(crate) async fn begin_if_free(&self, key: &StoreKey) -> Result<(Snapshot, Option<FlowLease>), ToolError> {
        let started = telemetry::store_clock();
        let begun = self.store.begin(key, Hold::IfFree).await;
        telemetry::record_store("load", started);
        begun.map(|step| (step.loaded, step.lease)).map_err(store_failure)
    }

    pub(crate) async fn load(&self, key: &StoreKey) -> Result<Snapshot, ToolError> {
        let started = telemetry::store_clock();
        let loaded = self.store.load(key).await;
        telemetry::record_store("load", started);
        loaded.map_err(store_failure)
    }

    /// The flow's snapshot (a new flow's is empty); a flow a handle names must still exist.
    pub(crate) async fn load_flow(&self, flow: Option<&FlowRef>) -> Result<Snapshot, ToolError> {
        let Some(flow) = flow.filter(|f| !f.is_new) else { return Ok(Snapshot::default()) };
        let loaded = self.load(&flow.key).await?;
        self.flow_as_named(flow, loaded)
    }

    /// The flow as `loaded` from its key (a new flow's is empty); a flow a handle names
    /// must still exist.
    pub(crate) fn flow_as_named(&self, flow: &FlowRef, loaded: Snapshot) -> Result<Snapshot, ToolError> {
        if flow.is_new {
            return Ok(Snapshot::default());
        }
        if flow.handle_id.is_some() && loaded.version == 0 {
            return Err(ToolError::handle_expired(
                "the conversation this handle names has ended or expired",
                self.flows.restart_hint(),
            ));
        }
        Ok(loaded)
    }

    /// Writes `next` over `before` (with its history `entry`, for a transition): committed
    /// now ([`Records::commit`], [`Records::commit_transition`]), or, for a call whose
    /// handler opened a transaction, added to `collected` for that transaction's commit.
    /// Returns what is (or will be) committed; a collected write's version is the one it
    /// will have at least.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write(
        &self,
        key: &StoreKey,
        before: &Snapshot,
        mut next: Snapshot,
        lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
        collected: Option<&mut Vec<RecordWrite>>,
    ) -> Result<Snapshot, ToolError> {
        let Some(collected) = collected else {
            return match entry {
                Some((entry, retention)) => {
                    next.version = self.commit_transition(key, before, &next, lease, entry, retention).await?;
                    Ok(next)
                }
                None => self.commit(key, before, next, lease).await,
            };
        };
        if key.is_handle_flow() {
            next.expires_at_ms = Some(self.flows.expiry_from(next.updated_at_ms));
        }
        collected.push(RecordWrite {
            key: key.clone(),
            expected: before.version,
            next: next.clone(),
            fence: lease.and_then(FlowLease::fence).map(str::to_string),
            entry: entry.map(|(entry, retention)| (entry.clone(), retention)),
            if_absent: false,
        });
        next.version = before.version + 1;
        Ok(next)
    }

    /// Commits `next` over `before`, under `lease` when the call holds the key's lease (a
    /// shared store then refuses a holder that lost it); a handle's flow gets a fresh expiry.
    pub(crate) async fn commit(
        &self,
        key: &StoreKey,
        before: &Snapshot,
        mut next: Snapshot,
        lease: Option<&FlowLease>,
    ) -> Result<Snapshot, ToolError> {
        if key.is_handle_flow() {
            next.expires_at_ms = Some(self.flows.expiry_from(next.updated_at_ms));
        }
        let started = telemetry::store_clock();
        let committed = self.store.commit(key, before.version, &next, lease, None).await;
        telemetry::record_store("commit", started);
        next.version = committed.map_err(store_failure)?;
        Ok(next)
    }

    /// Commits an instance's transition `next` over `before` with its history `entry`, in
    /// one atomic step (a store that keeps no history commits the transition alone).
    pub(crate) async fn commit_transition(
        &self,
        key: &StoreKey,
        before: &Snapshot,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: &HistoryEntry,
        retention: HistoryRetention,
    ) -> Result<u64, ToolError> {
        let started = telemetry::store_clock();
        let committed = self.store.commit(key, before.version, next, lease, Some((entry, retention))).await;
        telemetry::record_store("commit", started);
        committed.map_err(store_failure)
    }

    /// Commits what time has made due on `machine`'s instance at `key`, read as `before`,
    /// under the instance's `lease`: one transition at a time, each with its history entry
    /// (principal `timer`, at the time it was due). Returns the instance as committed
    /// after them (`before` itself when nothing was due).
    pub(crate) async fn settle(
        &self,
        machine: &Machine,
        key: &StoreKey,
        before: Snapshot,
        lease: &FlowLease,
    ) -> Result<Snapshot, ToolError> {
        Ok(self.settle_then(machine, key, before, lease, |_| ()).await?.0)
    }

    /// [`Records::settle`], with `last` applied to the last snapshot it commits, in that
    /// commit (the sweep claims the effects the moves recorded there: one commit fewer a
    /// timer). Returns what `last` answered, `None` when nothing was committed.
    pub(crate) async fn settle_then<R>(
        &self,
        machine: &Machine,
        key: &StoreKey,
        before: Snapshot,
        lease: &FlowLease,
        last: impl FnOnce(&mut Snapshot) -> R,
    ) -> Result<(Snapshot, Option<R>), ToolError> {
        let retention = self.retention;
        let now = now_ms();
        let Some((settled, fired)) = machine.settle(&before, now) else { return Ok((before, None)) };
        let mut current = before;
        if fired.is_empty() {
            // Only a deadline the machine no longer has: dropped.
            let mut next = current.next();
            next.due_at_ms = settled.due_at_ms;
            let answered = last(&mut next);
            return Ok((self.commit(key, &current, next, Some(lease)).await?, Some(answered)));
        }
        let mut last = Some(last);
        let mut answered = None;
        for (n, step) in fired.iter().enumerate() {
            let mut next = current.with_state(machine.id(), &step.to);
            machine.entered(&mut next, &step.to, step.at_ms);
            next.timed_at_ms = Some(step.at_ms);
            // Named by when it was due: the same on every replica that might commit it.
            let commit = format!("after-{}", step.at_ms);
            crate::effect::record_move(machine, key, Some(&step.from), &step.to, &commit, &mut next);
            if n + 1 == fired.len() {
                // A deadline the machine no longer has is dropped with the last move.
                next.due_at_ms = settled.due_at_ms;
                answered = last.take().map(|last| last(&mut next));
            }
            let entry = HistoryEntry::timer(&step.from, &step.to, step.after_ms, step.at_ms);
            // The transition's hooks first: what they wrote commits with it.
            let hooks = self.hooks.between(machine.id(), Some(&step.from), &step.to);
            let transaction = match hooks.is_empty() {
                true => None,
                false => {
                    let from_to = (Some(step.from.as_str()), step.to.as_str());
                    let moved = Moved::new(machine, key, current.owner.clone(), from_to, None, next.context.clone());
                    self.run_hooks(&hooks, &moved).await?
                }
            };
            next.version = match transaction {
                None => self.commit_transition(key, &current, &next, Some(lease), &entry, retention).await?,
                Some(transaction) => {
                    let write = RecordWrite {
                        key: key.clone(),
                        expected: current.version,
                        next: next.clone(),
                        fence: lease.fence().map(str::to_string),
                        entry: Some((entry.clone(), retention)),
                        if_absent: false,
                    };
                    self.commit_in(transaction, write).await?
                }
            };
            tracing::info!(on = %key, machine = machine.id(), from = step.from, to = step.to, "transition committed by time");
            let _ = self.timers.send(TimerCommit { key: key.clone(), machine: machine.id().to_string(), entry });
            current = next;
        }
        Ok((current, answered))
    }

    /// What time made due on `machine`'s instance at `key`, read as `loaded` by a call that
    /// does not write it, committed now under its lease: the instance as committed after.
    /// A transition whose transactional hooks write your rows is never shown uncommitted —
    /// the call waits for the lease (a call holding it commits it first), or is told
    /// `FLOW_BUSY` — so no call reads a state its rows do not have yet. Any other is
    /// committed if the lease is free, and else applied to what the call reads; the
    /// sweeper commits it.
    pub(crate) async fn commit_due(
        &self,
        machine: &Machine,
        key: &StoreKey,
        loaded: Snapshot,
    ) -> Result<Snapshot, ToolError> {
        let Some((_, fired)) = machine.settle(&loaded, now_ms()) else { return Ok(loaded) };
        if fired.iter().any(|step| !self.hooks.between(machine.id(), Some(&step.from), &step.to).is_empty()) {
            let (lease, fresh) = self.begin(key, "instance").await?;
            return self.settle(machine, key, fresh, &lease).await;
        }
        let committed = async {
            let (fresh, lease) = self.begin_if_free(key).await?;
            match lease {
                Some(lease) => self.settle(machine, key, fresh, &lease).await,
                None => Ok(fresh),
            }
        };
        Ok(committed.await.unwrap_or_else(|error| {
            tracing::warn!(on = %key, %error, "cannot commit what time made due on a read; the sweeper will");
            loaded
        }))
    }

    /// Runs `hooks` for `moved` in a transaction of their own: what they wrote, to commit
    /// with the transition (`None`: nothing). One that fails leaves nothing.
    async fn run_hooks(
        &self,
        hooks: &[&Hook],
        moved: &Moved,
    ) -> Result<Option<Box<dyn crate::store::StoreTransaction>>, ToolError> {
        let slot = TransactionSlot::new(self.shared.clone(), self.tables.cloned());
        if let Err(error) = hook::run(hooks, &slot, moved).await {
            // Rolled back as it drops; the next sweep (or read) tries again.
            drop(slot.take().await);
            return Err(error);
        }
        Ok(slot.take().await)
    }

    /// Commits `write` in `transaction`, with what was written in it; returns the version.
    async fn commit_in(
        &self,
        transaction: Box<dyn crate::store::StoreTransaction>,
        write: RecordWrite,
    ) -> Result<u64, ToolError> {
        let started = telemetry::store_clock();
        let committed = transaction.commit(vec![write]).await;
        telemetry::record_store("commit", started);
        committed.map_err(store_failure)?.first().copied().ok_or_else(|| ToolError::internal("no version committed"))
    }

    /// The next number of the counter at `counter`: one more than the last any process
    /// sharing the store drew (compare-and-set), kept with the records, so a restart or
    /// another replica never draws one again. Bounded as a lease wait is: a call that
    /// waits `lease_wait` for its turn in this process, or keeps losing the race to other
    /// replicas that long, is answered `FLOW_BUSY`. (A round already begun is not cut: a
    /// number its commit drew would be lost.)
    pub(crate) async fn mint(&self, counter: &StoreKey) -> Result<u64, ToolError> {
        let busy = || ToolError::flow_busy("instance", self.lease_wait.as_millis().max(1) as u64);
        let deadline = tokio::time::Instant::now() + self.lease_wait;
        let Some(_one_at_a_time) = crate::wait::within(self.lease_wait, self.minting.of(counter).lock()).await else {
            return Err(busy());
        };
        for _ in 0..64 {
            let current = self.store.load(counter).await.map_err(store_failure)?;
            let last =
                current.record.as_ref().and_then(|r| r.get("n")).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let next = crate::store::Snapshot { record: Some(serde_json::json!({ "n": last + 1 })), ..current.next() };
            match self.store.commit(counter, current.version, &next, None, None).await {
                Ok(_) => return Ok(last + 1),
                Err(StoreError::Conflict { .. }) if tokio::time::Instant::now() < deadline => continue,
                Err(StoreError::Conflict { .. }) => return Err(busy()),
                Err(error) => return Err(store_failure(error)),
            }
        }
        Err(busy())
    }

    /// Whether a handle's flow is past half its life and should be refreshed on this use.
    pub(crate) fn needs_refresh(&self, flow: Option<&FlowRef>, snapshot: &Snapshot) -> bool {
        let half_life = self.flows.ttl().as_millis() as u64 / 2;
        flow.is_some_and(|f| f.handle_id.is_some() && !f.is_new)
            && snapshot.expires_at_ms.is_some_and(|at| at.saturating_sub(now_ms()) < half_life)
    }
}

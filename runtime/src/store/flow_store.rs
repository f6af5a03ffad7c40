//! [`FlowStore`]: what every backend provides (the store room's face, see `mod.rs`).

use async_trait::async_trait;

use super::{
    FlowLease, HistoryEntry, HistoryRetention, InstanceCounts, LiveRecords, Snapshot, StoreError, StoreKey,
    StoreTransaction,
};

/// A backend that keeps flows and instances as [`Snapshot`]s.
#[async_trait]
pub trait FlowStore: Send + Sync + 'static {
    /// The record's committed snapshot, or the default (version 0) if it never committed,
    /// was removed, or expired.
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError>;

    /// Stores `next` if the record's stored version is still `expected_version` (0: absent)
    /// and returns the version it was stored under, which the store assigns (above every
    /// version the key ever had). On a mismatch nothing is written and
    /// [`StoreError::Conflict`] returns.
    async fn compare_and_set(&self, key: &StoreKey, expected_version: u64, next: &Snapshot) -> Result<u64, StoreError>;

    /// Waits for, then holds, the key's exclusive lease until the returned guard drops.
    /// Callers bound the wait themselves (dropping the future gives up the place in line).
    async fn lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError>;

    /// [`FlowStore::lease`], then the record as committed once the lease is held
    /// ([`FlowStore::load`]): what a call that writes reads. A store that can do both in one
    /// round trip overrides it.
    async fn lease_and_load(&self, key: &StoreKey) -> Result<(FlowLease, Snapshot), StoreError> {
        let lease = self.lease(key).await?;
        let loaded = self.load(key).await?;
        Ok((lease, loaded))
    }

    /// Takes the key's lease from whoever holds it, without waiting: what a replica does
    /// before it speaks for another that stopped answering (a task's runner whose heartbeat
    /// lapsed), so that the holder, should it resume, finds its fenced commits refused
    /// ([`StoreError::LeaseLost`]) instead of contradicting what was reported. The default,
    /// for a store whose leases live and die with this process (a holder that stopped is a
    /// process that ended), waits for the lease like [`FlowStore::lease`].
    async fn take_over_lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
        self.lease(key).await
    }

    /// The record as committed and, when nobody holds its lease now, the lease as well —
    /// the read then made under it, as [`FlowStore::lease_and_load`]'s is — without ever
    /// waiting for it: what a call that will write reads first, so that an uncontended call
    /// leases and reads in one step while a contended one is judged at once on what is
    /// committed (and leases later, waiting its turn). The default takes no lease: a store
    /// that can take a free one with the read in one round trip overrides it.
    async fn load_and_try_lease(&self, key: &StoreKey) -> Result<(Snapshot, Option<FlowLease>), StoreError> {
        Ok((self.load(key).await?, None))
    }

    /// Forgets the record, and its history. The server calls it when the connection that
    /// owns a connection-keyed flow ends. Removing never breaks a lease someone holds or
    /// waits for, and never lets the key's version go back.
    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError>;

    /// [`FlowStore::compare_and_set`] by the holder of `lease` on `key`: a backend whose
    /// leases can be lost (they expire) commits only while `lease` still holds, so a holder
    /// that lost its lease — paused past its expiry while another took over — cannot
    /// commit ([`StoreError::LeaseLost`]). The default, for a store whose leases live and
    /// die with this process, is the plain compare-and-set.
    async fn commit_leased(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: &FlowLease,
    ) -> Result<u64, StoreError> {
        let _ = lease;
        self.compare_and_set(key, expected_version, next).await
    }

    /// The keys of records other processes commit, as they commit them (a shared store's
    /// feed, so that a replica's sessions hear of another replica's transitions); `None`
    /// (the default) for a store no other process writes.
    fn commits(&self) -> Option<tokio::sync::broadcast::Receiver<StoreKey>> {
        None
    }

    /// Whether other processes share this store's records (replicas): state handles then
    /// need a key every replica knows, so a server on a shared store without a configured
    /// handle key refuses to start.
    fn is_shared(&self) -> bool {
        false
    }

    /// Spends one call of a rate limit of `calls` per `per_ms` under `window`, counted in
    /// the store so that every process sharing it counts together: `Some(Ok(ticket))`
    /// admitted (the ticket gives it back, [`FlowStore::refund_window`]), `Some(Err(ms))`
    /// refused until `ms` from now. `None` (the default): the store keeps no windows, and
    /// each process counts its own calls — right for a store only one process uses.
    async fn spend_window(
        &self,
        window: &str,
        calls: u32,
        per_ms: u64,
    ) -> Result<Option<Result<String, u64>>, StoreError> {
        let _ = (window, calls, per_ms);
        Ok(None)
    }

    /// Gives back a call [`FlowStore::spend_window`] admitted under `ticket`.
    async fn refund_window(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        let _ = (window, ticket);
        Ok(())
    }

    /// Whether the store keeps instances' histories. One that does not (the default, for a
    /// store written before histories existed) commits transitions without their entries
    /// and answers [`FlowStore::history`] with `None`, and a server offering a history tool
    /// on it refuses to start.
    fn keeps_history(&self) -> bool {
        false
    }

    /// Commits like [`FlowStore::commit_leased`] (with `lease`) or
    /// [`FlowStore::compare_and_set`] (without), and in the same atomic step appends
    /// `entry` to the key's history, then drops what `retention` does not keep (measured
    /// against `entry`'s time). A commit that fails appends nothing.
    ///
    /// The default, for a store that keeps no history ([`FlowStore::keeps_history`] is
    /// `false`), commits alone.
    async fn commit_with_history(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: &HistoryEntry,
        retention: HistoryRetention,
    ) -> Result<u64, StoreError> {
        let _ = (entry, retention);
        match lease {
            Some(lease) => self.commit_leased(key, expected_version, next, lease).await,
            None => self.compare_and_set(key, expected_version, next).await,
        }
    }

    /// The key's history, oldest entry first: `Some(vec![])` for a record with none (or no
    /// record, or one removed or expired: its history goes with it); `None` (the default)
    /// when the store keeps no history at all.
    async fn history(&self, key: &StoreKey) -> Result<Option<Vec<HistoryEntry>>, StoreError> {
        let _ = key;
        Ok(None)
    }

    /// The keys of instances whose deadline ([`Snapshot::due_at_ms`]) is at or before
    /// `now_ms`, soonest first, at most `limit`: what the engine's sweeper commits. A store
    /// that indexes deadlines beside its records may name an instance whose deadline has
    /// moved since; the sweeper reads each one and tells it with
    /// [`FlowStore::due_changed`]. `Ok(vec![])` (the default): the store keeps no index,
    /// and what is due is applied when each instance is next read.
    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        let _ = (now_ms, limit);
        Ok(Vec::new())
    }

    /// Tells the store's index of deadlines that `key`'s deadline is `due_at_ms` (`None`:
    /// it has none), after a sweep read the record. The default does nothing: right for a
    /// store whose [`FlowStore::due`] reads the records themselves.
    async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError> {
        let _ = (key, due_at_ms);
        Ok(())
    }

    /// Whether the store keeps tables of yours beside its own, in one database
    /// ([`FlowStore::begin`] opens transactions): a server whose handlers take a
    /// [`Transaction`](crate::Transaction) refuses to start on a store that does not.
    fn keeps_your_tables(&self) -> bool {
        false
    }

    /// Opens a transaction for one call, on a store that keeps tables of yours beside its
    /// own: the handler's SQL runs in it and the call's records commit with it
    /// ([`Transaction`](crate::Transaction)). `Ok(None)` (the default): the store keeps no
    /// tables of yours (memory, Redis).
    async fn begin(&self) -> Result<Option<Box<dyn StoreTransaction>>, StoreError> {
        Ok(None)
    }

    /// How many live (unexpired) flows and instances the store holds: read when metrics
    /// are scraped (the `toolgate_live_flows` and `toolgate_live_instances` gauges), never on
    /// a call's path. `None` (the default): the store does not count them.
    async fn count_live(&self) -> Result<Option<LiveRecords>, StoreError> {
        Ok(None)
    }

    /// How many instances of `machine` in `scope` (a tenant, or `""` for a machine whose
    /// instances are everyone's) are in each state, wait on a timer, and are held by a
    /// task: read from counters the store keeps as its records commit, never by reading
    /// the instances (what the console shows on each state of its diagram). `None` (the
    /// default): the store keeps no such counters.
    async fn count_instances(&self, scope: &str, machine: &str) -> Result<Option<InstanceCounts>, StoreError> {
        let _ = (scope, machine);
        Ok(None)
    }
}

//! [`MemoryStore`]: the struct and the [`FlowStore`] it is.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::windows::WindowLog;
use crate::store::leases::LocalLeases;
use crate::store::{
    Capabilities, Counts, FlowLease, FlowStore, Histories, HistoryEntry, HistoryRetention, Hold, InstanceCounts,
    LiveRecords, RateWindows, Snapshot, Step, StoreError, StoreKey, counts, now_ms,
};

/// Keeps flows and instances in this process's memory. Cheap to clone; clones share them.
///
/// Records and leases are kept apart, so removing a record cannot touch a lease someone
/// holds or waits for; a lease's entry goes when its last holder or waiter does. Versions
/// come from one store-wide counter, so they never go back for a key, even across
/// removals. Expired records (flows named by a state handle) load as absent and are
/// swept from time to time. Instances' histories live beside their records, under the
/// same lock: a transition and its entry are written together or not at all.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    records: Mutex<Records>,
    leases: LocalLeases,
    /// The last version assigned, to any key.
    revision: AtomicU64,
    windows: Mutex<WindowLog>,
}

/// The records and their histories, changed together under one lock.
#[derive(Debug, Default)]
struct Records {
    snapshots: HashMap<StoreKey, Snapshot>,
    /// Each record's history, oldest entry first; only records that have one.
    histories: HashMap<StoreKey, VecDeque<HistoryEntry>>,
    /// The instances counted by name ([`counts`]), changed with the records.
    counters: HashMap<String, i64>,
}

impl Records {
    /// The live record's version (0: absent or expired).
    fn version(&self, key: &StoreKey, now: u64) -> u64 {
        self.snapshots.get(key).filter(|s| !s.is_expired(now)).map_or(0, |s| s.version)
    }

    fn is_live(&self, key: &StoreKey, now: u64) -> bool {
        self.version(key, now) > 0
    }

    /// Moves the counters from what `key` held (`old`) to what it holds (`new`).
    fn recount(&mut self, key: &StoreKey, old: Option<&Snapshot>, new: Option<&Snapshot>) {
        let (old, new) = (old.and_then(|s| counts::counted(key, s)), new.and_then(|s| counts::counted(key, s)));
        if old == new {
            return;
        }
        for (counted, step) in [(old, -1), (new, 1)] {
            for name in counted.into_iter().flat_map(|counted| counted.names) {
                *self.counters.entry(name).or_default() += step;
            }
        }
    }
}

/// Sweep expired records once every this many commits.
const SWEEP_EVERY: u64 = 1024;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many records (flows and instances) the store holds, for monitoring and tests.
    pub fn record_count(&self) -> usize {
        let now = now_ms();
        self.records().snapshots.values().filter(|s| !s.is_expired(now)).count()
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        // Only short, non-panicking critical sections touch the maps; a poisoned lock
        // still holds consistent data, so keep serving instead of failing every flow.
        self.inner.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn windows(&self) -> MutexGuard<'_, WindowLog> {
        self.inner.windows.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Compare-and-set, appending `entry` (trimmed by `retention`) under the same lock.
    fn write(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        let now = now_ms();
        let mut records = self.records();
        let found = records.version(key, now);
        if found != expected_version {
            return Err(StoreError::Conflict { expected: expected_version, found });
        }
        if found == 0 {
            // What an expired record left behind went with it.
            records.histories.remove(key);
        }
        let version = self.inner.revision.fetch_add(1, Ordering::Relaxed) + 1;
        let stored = Snapshot { version, ..next.clone() };
        records.recount(key, None, Some(&stored));
        if let Some(old) = records.snapshots.insert(key.clone(), stored) {
            records.recount(key, Some(&old), None);
        }
        if let Some((entry, retention)) = entry {
            // Room for one entry: most instances are idle with a short history, and a
            // default first growth would hold four (about 1 KiB each instance).
            let history = records.histories.entry(key.clone()).or_insert_with(|| VecDeque::with_capacity(1));
            history.push_back(entry.clone());
            while let Some(oldest) = history.front()
                && !retention.keeps(history.len() - 1, oldest.at_ms(), entry.at_ms())
            {
                history.pop_front();
            }
            if history.is_empty() {
                records.histories.remove(key);
            }
        }
        if version.is_multiple_of(SWEEP_EVERY) {
            let expired: Vec<StoreKey> =
                (records.snapshots.iter()).filter(|(_, s)| s.is_expired(now)).map(|(key, _)| key.clone()).collect();
            for key in expired {
                let old = records.snapshots.remove(&key);
                records.recount(&key, old.as_ref(), None);
            }
            let Records { snapshots, histories, .. } = &mut *records;
            histories.retain(|key, _| snapshots.contains_key(key));
        }
        Ok(version)
    }
}

#[async_trait]
impl FlowStore for MemoryStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        let now = now_ms();
        Ok(self.records().snapshots.get(key).filter(|s| !s.is_expired(now)).cloned().unwrap_or_default())
    }

    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        let lease = self.inner.leases.for_step(key, hold).await;
        Ok(Step { loaded: self.load(key).await?, lease })
    }

    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        _lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        // This process's leases cannot be lost: the compare-and-set is the whole guard.
        self.write(key, expected_version, next, entry)
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
        let mut records = self.records();
        let old = records.snapshots.remove(key);
        records.recount(key, old.as_ref(), None);
        records.histories.remove(key);
        Ok(())
    }

    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        let records = self.records();
        let mut due: Vec<(u64, &StoreKey)> = (records.snapshots.iter())
            .filter(|(_, s)| !s.is_expired(now_ms))
            .filter_map(|(key, s)| s.wake_at_ms().filter(|&at| at <= now_ms).map(|at| (at, key)))
            .collect();
        due.sort();
        Ok(due.into_iter().take(limit).map(|(_, key)| key.clone()).collect())
    }

    async fn due_changed(&self, _key: &StoreKey, _due_at_ms: Option<u64>) -> Result<(), StoreError> {
        // `due` reads the records themselves: there is no index to tell.
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { history: Some(self), windows: Some(self), counts: Some(self), ..Capabilities::default() }
    }
}

#[async_trait]
impl Histories for MemoryStore {
    async fn history(&self, key: &StoreKey) -> Result<Vec<HistoryEntry>, StoreError> {
        let records = self.records();
        Ok(match records.histories.get(key) {
            Some(history) if records.is_live(key, now_ms()) => history.iter().cloned().collect(),
            _ => Vec::new(),
        })
    }
}

#[async_trait]
impl RateWindows for MemoryStore {
    async fn spend(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError> {
        Ok(self.windows().spend(window, calls, per_ms, now_ms()))
    }

    async fn refund(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        self.windows().refund(window, ticket);
        Ok(())
    }
}

#[async_trait]
impl Counts for MemoryStore {
    async fn live(&self) -> Result<LiveRecords, StoreError> {
        let now = now_ms();
        let mut live = LiveRecords::default();
        for (key, _) in self.records().snapshots.iter().filter(|(_, s)| !s.is_expired(now)) {
            live.count(key.as_str());
        }
        Ok(live)
    }

    async fn instances(&self, scope: &str, machine: &str) -> Result<InstanceCounts, StoreError> {
        let prefix = counts::prefix(scope, machine);
        let records = self.records();
        let counters = (records.counters.iter()).filter(|(name, _)| name.starts_with(&prefix));
        Ok(counts::tally(&prefix, counters.map(|(name, n)| (name.clone(), *n))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_the_store_conformance_suite() {
        crate::store::conformance::check(&MemoryStore::new()).await;
        let store = MemoryStore::new();
        assert!(store.capabilities().counts.is_some(), "the memory store counts its live records");
        crate::store::conformance::check_live_counts(&store).await;
        crate::store::conformance::check_instance_counts(&store).await;
    }

    #[tokio::test]
    async fn lease_entries_go_with_their_last_holder() {
        let store = MemoryStore::new();
        let key = StoreKey::connection("x");
        drop(store.begin(&key, Hold::Wait).await.unwrap());
        assert!(store.inner.leases.is_empty());
    }
}

//! Per-key leases within one process: what [`MemoryStore`](super::MemoryStore) and
//! [`SqliteStore`](super::SqliteStore) (one process per file) hold transitions with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::OwnedMutexGuard;

use super::{FlowLease, Hold, StoreKey};

/// Exclusive leases by key, one waiting line per key; a key's entry goes when its last
/// holder or waiter does.
#[derive(Debug, Default, Clone)]
pub(crate) struct LocalLeases {
    held: Arc<Mutex<HashMap<StoreKey, Arc<tokio::sync::Mutex<()>>>>>,
}

impl LocalLeases {
    /// Waits for, then holds, `key`'s lease until the returned lease drops.
    pub(crate) async fn lease(&self, key: &StoreKey) -> FlowLease {
        let mutex = lock(&self.held).entry(key.clone()).or_default().clone();
        // If this future is dropped while waiting, `mutex` drops with it; the entry then
        // stays until the current holder's drop finds it unshared.
        let guard = mutex.lock_owned().await;
        FlowLease::new(LocalLease { guard: Some(guard), key: key.clone(), held: self.held.clone() })
    }

    /// The lease a step of `key` takes as `hold` says. A holder of a lease kept in this
    /// process stops only when the process ends, so taking it over is waiting for it; and
    /// a read with a free lease is two steps here either way, so [`Hold::IfFree`] takes
    /// none (the call is judged on what is committed, and leases when it writes).
    pub(crate) async fn for_step(&self, key: &StoreKey, hold: Hold) -> Option<FlowLease> {
        match hold {
            Hold::Wait | Hold::TakeOver => Some(self.lease(key).await),
            Hold::IfFree => None,
        }
    }

    /// Whether no lease is held or awaited (tests).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.held).is_empty()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Only short, non-panicking critical sections touch the map; a poisoned lock still
    // holds consistent data.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A held lease; on drop, forgets the key's entry if nobody else holds or awaits it.
struct LocalLease {
    guard: Option<OwnedMutexGuard<()>>,
    key: StoreKey,
    held: Arc<Mutex<HashMap<StoreKey, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Drop for LocalLease {
    fn drop(&mut self) {
        let mutex = self.guard.take().map(|guard| OwnedMutexGuard::mutex(&guard).clone());
        let mut held = lock(&self.held);
        // The map's Arc and ours: nobody else holds or waits for it (waiters clone the Arc
        // under this same map lock, so the count cannot grow behind our back).
        if let Some(mutex) = mutex
            && Arc::strong_count(&mutex) == 2
        {
            held.remove(&self.key);
        }
    }
}

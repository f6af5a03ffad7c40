//! The in-process store: the default for one process (design §8).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{FlowLease, FlowStore, StoreError};
use crate::flow::{FlowKey, Snapshot};

/// Keeps flows in this process's memory. Cheap to clone; clones share the flows.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    flows: Arc<Mutex<HashMap<FlowKey, Entry>>>,
}

#[derive(Debug, Default)]
struct Entry {
    snapshot: Option<Snapshot>,
    lease: Arc<tokio::sync::Mutex<()>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many flows the store holds (for monitoring and tests).
    pub fn flow_count(&self) -> usize {
        self.flows().len()
    }

    fn flows(&self) -> std::sync::MutexGuard<'_, HashMap<FlowKey, Entry>> {
        // The map is only touched by short, non-panicking critical sections; a poisoned
        // lock still holds consistent data, so keep serving instead of failing every flow.
        self.flows.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl FlowStore for MemoryStore {
    async fn load(&self, flow: &FlowKey) -> Result<Snapshot, StoreError> {
        Ok(self.flows().get(flow).and_then(|e| e.snapshot.clone()).unwrap_or_default())
    }

    async fn compare_and_set(&self, flow: &FlowKey, expected_version: u64, next: &Snapshot) -> Result<(), StoreError> {
        let mut flows = self.flows();
        let entry = flows.entry(flow.clone()).or_default();
        let found = entry.snapshot.as_ref().map_or(0, |s| s.version);
        if found != expected_version {
            return Err(StoreError::Conflict { expected: expected_version, found });
        }
        entry.snapshot = Some(next.clone());
        Ok(())
    }

    async fn lease(&self, flow: &FlowKey) -> Result<FlowLease, StoreError> {
        let lock = self.flows().entry(flow.clone()).or_default().lease.clone();
        Ok(FlowLease::new(lock.lock_owned().await))
    }

    async fn remove(&self, flow: &FlowKey) -> Result<(), StoreError> {
        self.flows().remove(flow);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_the_store_conformance_suite() {
        crate::store::conformance::check(&MemoryStore::new()).await;
    }
}

//! A memory store that tells a test of each commit: before it is made (the test may hold
//! it there, as a store that stopped answering would) and once it is made.

use toolgate::store::{
    Capabilities, FlowLease, FlowStore, HistoryEntry, HistoryRetention, Hold, MemoryStore, Snapshot, Step, StoreError,
    StoreKey,
};

/// What a [`Watched`] store tells of each commit.
#[async_trait::async_trait]
pub trait OnCommit: Send + Sync + 'static {
    /// Before the commit of `next` at `key` is made: the commit waits for it.
    async fn before(&self, _key: &StoreKey, _next: &Snapshot) {}

    /// Once the commit of `next` at `key` is made.
    fn made(&self, _key: &StoreKey, _next: &Snapshot) {}
}

/// A memory store whose commits pass through `hook`.
#[derive(Clone, Default)]
pub struct Watched<H> {
    pub store: MemoryStore,
    pub hook: H,
}

#[async_trait::async_trait]
impl<H: OnCommit> FlowStore for Watched<H> {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        self.store.load(key).await
    }

    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        self.store.begin(key, hold).await
    }

    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        self.hook.before(key, next).await;
        let version = self.store.commit(key, expected_version, next, lease, entry).await?;
        self.hook.made(key, next);
        Ok(version)
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
        self.store.remove(key).await
    }

    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        self.store.due(now_ms, limit).await
    }

    async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError> {
        self.store.due_changed(key, due_at_ms).await
    }

    fn capabilities(&self) -> Capabilities<'_> {
        self.store.capabilities()
    }
}

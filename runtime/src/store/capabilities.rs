//! [`Capabilities`]: what a store offers beyond [`FlowStore`](super::FlowStore)'s core, each
//! part a trait the store implements or an absence the server reads as such.

use async_trait::async_trait;

use super::{HistoryEntry, InstanceCounts, LiveRecords, StoreError, StoreKey, StoreTransaction};

/// What a store offers beyond the core, each part present or absent
/// ([`FlowStore::capabilities`](super::FlowStore::capabilities)). A store names the parts it
/// implements and leaves the rest to [`Default`]:
///
/// ```ignore
/// fn capabilities(&self) -> Capabilities<'_> {
///     Capabilities { history: Some(self), counts: Some(self), ..Capabilities::default() }
/// }
/// ```
#[derive(Clone, Copy, Default)]
pub struct Capabilities<'a> {
    /// Other processes share the store's records (replicas), and it tells each one what
    /// the others commit. Absent: no other process writes the store.
    pub replicas: Option<&'a dyn Replicas>,
    /// It keeps each instance's history, appended by [`FlowStore::commit`](super::FlowStore::commit)
    /// in the transition's own atomic step. Absent: transitions commit without their
    /// entries, and a server offering a history tool on the store refuses to start.
    pub history: Option<&'a dyn Histories>,
    /// It counts rate-limit windows itself, for every process sharing it. Absent: each
    /// process counts its own calls (right for a store only one process uses).
    pub windows: Option<&'a dyn RateWindows>,
    /// It keeps tables of yours beside its own, in one database, and opens a call's
    /// transaction there. Absent: a server whose handlers take a
    /// [`Transaction`](crate::Transaction) refuses to start on it.
    pub tables: Option<&'a dyn YourTables>,
    /// It counts live records and instances by state as its records commit. Absent: the
    /// metrics' live gauges and the console's counts are not shown.
    pub counts: Option<&'a dyn Counts>,
}

impl std::fmt::Debug for Capabilities<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities")
            .field("replicas", &self.replicas.is_some())
            .field("history", &self.history.is_some())
            .field("windows", &self.windows.is_some())
            .field("tables", &self.tables.is_some())
            .field("counts", &self.counts.is_some())
            .finish()
    }
}

/// A store that other processes share (replicas): state handles then need a key every
/// replica knows, so a server on it without a configured handle key refuses to start.
pub trait Replicas: Send + Sync {
    /// The keys of records other processes commit, as they commit them, so that a
    /// replica's sessions hear of another replica's transitions.
    fn commits(&self) -> tokio::sync::broadcast::Receiver<StoreKey>;
}

/// A store that keeps instances' histories.
#[async_trait]
pub trait Histories: Send + Sync {
    /// The key's history, oldest entry first: empty for a record with none (or no record,
    /// or one removed or expired: its history goes with it).
    async fn history(&self, key: &StoreKey) -> Result<Vec<HistoryEntry>, StoreError>;
}

/// A store that counts rate-limit windows for every process sharing it.
#[async_trait]
pub trait RateWindows: Send + Sync {
    /// Spends one call of a limit of `calls` per `per_ms` under `window`: `Ok(ticket)`
    /// admitted (the ticket gives it back, [`RateWindows::refund`]), `Err(ms)` refused
    /// until `ms` from now.
    async fn spend(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError>;

    /// Gives back a call [`RateWindows::spend`] admitted under `ticket`.
    async fn refund(&self, window: &str, ticket: &str) -> Result<(), StoreError>;
}

/// A store that keeps tables of yours beside its own (SQLite's file, Postgres's database).
#[async_trait]
pub trait YourTables: Send + Sync {
    /// Opens a transaction for one call: the handler's SQL runs in it and the call's
    /// records commit with it ([`Transaction`](crate::Transaction)).
    async fn transaction(&self) -> Result<Box<dyn StoreTransaction>, StoreError>;
}

/// A store that counts its records as they commit, never by reading them.
#[async_trait]
pub trait Counts: Send + Sync {
    /// How many live (unexpired) flows and instances it holds: read when metrics are
    /// scraped (the `toolgate_live_flows` and `toolgate_live_instances` gauges), never on
    /// a call's path.
    async fn live(&self) -> Result<LiveRecords, StoreError>;

    /// How many instances of `machine` in `scope` (a tenant, or `""` for a machine whose
    /// instances are everyone's) are in each state, wait on a timer, and are held by a
    /// task: what the console shows on each state of its diagram.
    async fn instances(&self, scope: &str, machine: &str) -> Result<InstanceCounts, StoreError>;
}

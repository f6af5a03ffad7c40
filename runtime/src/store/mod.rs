//! Flow stores: where snapshots live, with versioned compare-and-set and per-flow leases.
//!
//! Linearizability per flow (design §4) rests on two operations every backend provides:
//!
//! - [`FlowStore::lease`] — exclusive, per flow, held by a *transitioning* call from its
//!   gate check to its commit, so two such calls on one flow never both run their
//!   handlers; the loser waits, then sees the winner's committed state;
//! - [`FlowStore::compare_and_set`] — a commit applies only over the version it read, so
//!   even a lease that expired (a slow handler on a shared backend) cannot lose an update.
//!
//! Calls that fire no transition take no lease and never wait on one another.

pub mod conformance;
mod memory;

use async_trait::async_trait;

pub use memory::MemoryStore;

use crate::flow::{FlowKey, Snapshot};

/// A backend that keeps flow snapshots.
#[async_trait]
pub trait FlowStore: Send + Sync + 'static {
    /// The flow's committed snapshot, or the default (version 0) if it never committed.
    async fn load(&self, flow: &FlowKey) -> Result<Snapshot, StoreError>;

    /// Stores `next` if the flow's stored version is still `expected_version` (0: never
    /// committed). On a mismatch nothing is written and [`StoreError::Conflict`] returns.
    async fn compare_and_set(&self, flow: &FlowKey, expected_version: u64, next: &Snapshot) -> Result<(), StoreError>;

    /// Waits for, then holds, the flow's exclusive lease until the returned guard drops.
    async fn lease(&self, flow: &FlowKey) -> Result<FlowLease, StoreError>;

    /// Forgets the flow. The server calls it when the connection or session that owns a
    /// connection- or session-keyed flow ends, so such flows do not outlive their client.
    async fn remove(&self, flow: &FlowKey) -> Result<(), StoreError>;
}

/// An exclusive hold on one flow; released when dropped.
#[must_use = "the lease is released as soon as it is dropped"]
pub struct FlowLease {
    _guard: Box<dyn Send + Sync>,
}

impl FlowLease {
    /// Wraps a backend's guard; dropping the lease drops (and so releases) it.
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self { _guard: Box::new(guard) }
    }
}

impl std::fmt::Debug for FlowLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlowLease")
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend cannot be reached or answered with an error; nothing was written.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A compare-and-set found another version than expected; nothing was written.
    #[error("version conflict: expected {expected}, found {found}")]
    Conflict {
        /// The version the caller read.
        expected: u64,
        /// The version the store holds.
        found: u64,
    },
}

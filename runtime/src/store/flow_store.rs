//! [`FlowStore`]: the narrow core every backend provides — a step of one record (begin:
//! lease and load; commit: write under the lease), unleased reads, removal, and the index
//! of deadlines — and [`Capabilities`], what a backend offers beyond it.

use async_trait::async_trait;

use super::{Capabilities, FlowLease, HistoryEntry, HistoryRetention, Snapshot, StoreError, StoreKey};

/// How [`FlowStore::begin`] takes the record's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Wait for the lease, then load under it: what a call that writes does. The caller
    /// bounds the wait (dropping the future gives up the place in line).
    Wait,
    /// Load the record as committed and take the lease with the read only if nobody holds
    /// it now, never waiting: an uncontended call leases and reads in one step, while a
    /// contended one is judged at once on what is committed (and waits its turn later).
    /// A store that cannot do both in one round trip loads without a lease.
    IfFree,
    /// Take the lease from whoever holds it, without waiting, then load: what a replica
    /// does before it speaks for another that stopped answering (a task's runner whose
    /// heartbeat lapsed), so that the holder, should it resume, finds its fenced commits
    /// refused ([`StoreError::LeaseLost`]) instead of contradicting what was reported. A
    /// store whose leases live and die with this process (a holder that stopped is a
    /// process that ended) waits for the lease, as [`Hold::Wait`].
    TakeOver,
}

/// One step of a record, as [`FlowStore::begin`] began it: the record as committed when
/// it was read, and the lease it was read under (none for a [`Hold::IfFree`] that found it
/// held). The lease is held until it drops: the step may commit more than once under it
/// (what time made due, then the call's own transition), and its last commit is followed
/// by the drop that releases it.
#[derive(Debug)]
#[must_use = "a step's lease is released as soon as it is dropped"]
pub struct Step {
    /// The record as committed (the default, version 0, if it never committed, was
    /// removed, or expired).
    pub loaded: Snapshot,
    /// The record's lease, when the step holds it.
    pub lease: Option<FlowLease>,
}

impl Step {
    /// The step's lease and what was read under it, for a step that must hold one
    /// ([`Hold::Wait`], [`Hold::TakeOver`]); a store that began one without a lease has
    /// broken the contract, and the step fails as the store being unavailable.
    pub fn leased(self) -> Result<(FlowLease, Snapshot), StoreError> {
        match self.lease {
            Some(lease) => Ok((lease, self.loaded)),
            None => Err(StoreError::Unavailable("the store began a step without its lease".into())),
        }
    }
}

/// A backend that keeps flows and instances as [`Snapshot`]s.
///
/// Its core is a **step** of one record: [`FlowStore::begin`] takes the record's exclusive
/// lease and loads it, [`FlowStore::commit`] writes under that lease (with the
/// transition's history entry) and the lease is released when the step's lease drops.
/// What only some stores offer — a feed for replicas, histories, shared rate windows,
/// tables of yours, counters — is a [`Capabilities`] value of typed parts, each one
/// present or absent: never a flag, and never a default that quietly does nothing.
/// `store::conformance` checks a backend against all of it.
#[async_trait]
pub trait FlowStore: Send + Sync + 'static {
    /// The record's committed snapshot, or the default (version 0) if it never committed,
    /// was removed, or expired: an unleased read (views, listings).
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError>;

    /// Begins a step of the record at `key`: its lease taken as `hold` says, and the
    /// record as committed once the lease is held ([`Step`]).
    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError>;

    /// Stores `next` if the record's stored version is still `expected_version` (0:
    /// absent) and returns the version it was stored under, which the store assigns (above
    /// every version the key ever had). On a mismatch nothing is written and
    /// [`StoreError::Conflict`] returns.
    ///
    /// With `lease` (the step's), a store whose leases can be lost (they expire) commits
    /// only while that lease still holds, so a holder paused past its expiry while another
    /// took over cannot commit ([`StoreError::LeaseLost`]). Without one it is a plain
    /// compare-and-set (counters, idempotency records, challenges).
    ///
    /// With `entry`, a store that keeps histories ([`Capabilities::history`]) appends it to
    /// the key's history in the same atomic step, then drops what `retention` does not
    /// keep (measured against the entry's time); a commit that fails appends nothing. A
    /// store without histories commits the transition alone, and a server offering a
    /// history tool on it refuses to start.
    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError>;

    /// Forgets the record, and its history. The server calls it when the connection that
    /// owns a connection-keyed flow ends. Removing never breaks a lease someone holds or
    /// waits for, and never lets the key's version go back.
    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError>;

    /// The keys of instances whose deadline ([`Snapshot::wake_at_ms`]) is at or before
    /// `now_ms`, soonest first, at most `limit`: what the engine's sweeper commits. Every
    /// [`FlowStore::commit`] indexes the deadline it writes, or that it has none, in its
    /// own atomic step, so no index write of an older commit lands over a newer one's. A
    /// store may still name an instance not due (one expired since): the sweeper reads
    /// each one and tells it with [`FlowStore::due_changed`]. A store that keeps no index
    /// answers `Ok(vec![])`, and what is due is applied when each instance is next read.
    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError>;

    /// Tells the store's index of deadlines that `key`'s deadline is `due_at_ms` (`None`:
    /// it has none), where no commit told it: after a sweep read the record and committed
    /// nothing, or to stop naming an instance no server serves. A store whose
    /// [`FlowStore::due`] reads the records themselves has nothing to do.
    async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError>;

    /// What the store offers beyond the core.
    fn capabilities(&self) -> Capabilities<'_>;

    /// Finishes what the store still does in the background — releasing the leases
    /// dropped last, which a shared store releases after the drop — so that another
    /// process can take them at once, then closes its connections. The server calls it
    /// last as it stops. A store with nothing in the background has nothing to do.
    async fn close(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

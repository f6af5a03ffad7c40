//! [`PendingCommit`]: a call's commit that waits for its handler's transaction.

use super::log::CommitLog;
use crate::error::{ToolError, store_failure};
use crate::store::{FlowLease, RecordWrite, StoreTransaction};
use crate::telemetry;

/// A call's commit that waits for its handler's transaction: the records it writes, written
/// in that transaction and committed with it ([`PendingCommit::finish`]). Dropped
/// unfinished, nothing of it — or of what the handler wrote — is kept.
pub(crate) struct PendingCommit {
    pub(crate) transaction: Box<dyn StoreTransaction>,
    pub(crate) writes: Vec<RecordWrite>,
    /// The leases of the records written, held until the commit is made: a shared store
    /// checks their fencing tokens in it.
    pub(crate) leases: Vec<FlowLease>,
    /// What the log says of the commit, once it is made.
    pub(crate) log: CommitLog,
}

impl PendingCommit {
    /// Writes the call's records, and `also` (its idempotency record), in the handler's
    /// transaction, and commits it.
    pub(crate) async fn finish(self, also: Option<RecordWrite>) -> Result<(), ToolError> {
        let Self { transaction, mut writes, leases, log } = self;
        writes.extend(also);
        let started = telemetry::store_clock();
        let committed = transaction.commit(writes).await;
        drop(leases);
        telemetry::record_store("commit", started);
        committed.map_err(store_failure)?;
        log.emit();
        Ok(())
    }
}

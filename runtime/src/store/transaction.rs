//! A call's transaction on a store that keeps tables of yours beside its own (SQLite's
//! file, Postgres's database): the handler's SQL and the call's commit — state, context,
//! history entry, idempotency record — are one database transaction, committed together
//! or not at all ([`YourTables::transaction`](super::YourTables::transaction)).

use async_trait::async_trait;

use super::sql::SqlRow;
use super::{HistoryEntry, HistoryRetention, Snapshot, StoreError, StoreKey};

/// One record a call's commit writes: a compare-and-set of `key` from `expected` to
/// `next`, under the lease `fence` names (a shared store's), with `entry` appended to the
/// key's history.
#[derive(Debug, Clone)]
pub struct RecordWrite {
    /// The record.
    pub key: StoreKey,
    /// The version the call read (0: absent).
    pub expected: u64,
    /// What it becomes.
    pub next: Snapshot,
    /// The fencing token of the lease the call holds on `key`, on a store whose leases
    /// carry one.
    pub fence: Option<String>,
    /// The history entry the transition appends, and what the history keeps.
    pub entry: Option<(HistoryEntry, HistoryRetention)>,
    /// Written only if the key holds no live record, and skipped (not a conflict) if it
    /// does: an idempotency record, whose first writer's result stands.
    pub if_absent: bool,
}

/// A handler's rusqlite work, run at its call's commit on the SQLite writer, inside the
/// call's savepoint of the group's transaction
/// ([`Transaction::sqlite_at_commit`](crate::Transaction::sqlite_at_commit)).
pub type SqliteWork = Box<dyn FnOnce(&rusqlite::Connection) -> rusqlite::Result<()> + Send>;

/// A transaction a store opened for one call ([`YourTables::transaction`](super::YourTables::transaction)):
/// the handler's statements run in it, then [`StoreTransaction::commit`] writes the call's
/// records in it and commits the whole. Dropped without a commit, nothing of it is kept.
#[async_trait]
pub trait StoreTransaction: Send + Sync {
    /// Runs the statement `sql` (parameters `$1`, `$2`, …) in the transaction. A store
    /// that runs statements only at the commit (SQLite, whose one writer cannot wait on
    /// a handler) answers `Ok(None)`; one that runs it now, the rows it changed.
    async fn execute(&mut self, sql: &str, params: &[super::SqlValue]) -> Result<Option<u64>, StoreError>;

    /// Runs the query `sql` and returns its rows: in the transaction on a store that runs
    /// statements as they come (it sees the call's own writes); on one that runs them at
    /// the commit, on what is committed.
    async fn query(&mut self, sql: &str, params: &[super::SqlValue]) -> Result<Vec<SqlRow>, StoreError>;

    /// Runs `sql`, statements without parameters separated by `;`, in the transaction:
    /// the tables of yours a server creates as it starts (`CREATE TABLE IF NOT EXISTS`).
    async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError>;

    /// Writes `writes` in the transaction, in order, then commits it: their versions, or
    /// the first write's failure (a conflict, a lost lease), and then nothing of the
    /// transaction is kept. A commit sent but not answered is
    /// [`StoreError::OutcomeUnknown`].
    async fn commit(self: Box<Self>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError>;

    /// Readies the transaction's tokio-postgres client to be lent to a handler's own
    /// driver code ([`Transaction::postgres`](crate::Transaction::postgres)), so that the
    /// commit can tell whether that code ended the transaction: `false` (the default) if
    /// the store has no such client.
    #[cfg(feature = "postgres")]
    async fn lend_postgres(&mut self) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// The tokio-postgres client the transaction runs on, inside its `BEGIN`, once
    /// [`StoreTransaction::lend_postgres`] readied it. `None` (the default): the store has
    /// no such client.
    #[cfg(feature = "postgres")]
    fn postgres_client(&self) -> Option<&tokio_postgres::Client> {
        None
    }

    /// Queues `work` to run at the commit, before the call's records are written, on the
    /// SQLite connection that commits them and inside the call's part of its transaction
    /// ([`Transaction::sqlite_at_commit`](crate::Transaction::sqlite_at_commit)). The
    /// default refuses it: the store commits on no SQLite connection.
    fn sqlite_at_commit(&mut self, work: SqliteWork) -> Result<(), StoreError> {
        drop(work);
        Err(StoreError::Statement(
            "this store commits on no SQLite connection: its transaction runs no rusqlite code".into(),
        ))
    }
}

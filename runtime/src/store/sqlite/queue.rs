//! What waits for the next group commit.

use crate::store::{RecordWrite, SqlValue, StoreError};

/// The commits waiting for the next group, and whether a leader is committing groups.
#[derive(Default)]
pub(super) struct Queue {
    pub(super) pending: Vec<Queued>,
    pub(super) leading: bool,
}

/// A commit waiting for its group: a handler's statements (a call's
/// [`Transaction`](crate::Transaction)), then the records the call writes.
pub(super) struct Queued {
    pub(super) statements: Vec<Statement>,
    pub(super) writes: Vec<RecordWrite>,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<Vec<u64>, StoreError>>,
}

/// A handler's statement, run when its call commits.
pub(super) enum Statement {
    /// One statement and its parameters.
    One(String, Vec<SqlValue>),
    /// Statements without parameters, separated by `;` (the tables of yours a server
    /// creates as it starts).
    Batch(String),
    /// A handler's rusqlite work (taken when it runs: it runs once).
    Work(std::sync::Mutex<Option<crate::store::SqliteWork>>),
}

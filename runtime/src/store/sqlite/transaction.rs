//! A handler's transaction on the SQLite file.

use async_trait::async_trait;

use super::queue::Statement;
use super::store::{SqliteStore, lock};
use crate::store::{RecordWrite, SqlRow, SqlValue, StoreError, StoreTransaction, unavailable};

/// A call's transaction on the SQLite file. The file has one writer, which commits the
/// calls of many instances together (group commit) and so cannot wait for one handler:
/// the handler's statements are kept, and run when its call commits, first in the call's
/// unit of the group's transaction (all of it or none). Its queries read what is
/// committed, on the reader connection.
struct SqliteTransaction {
    store: SqliteStore,
    statements: Vec<Statement>,
}

#[async_trait]
impl StoreTransaction for SqliteTransaction {
    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<Option<u64>, StoreError> {
        // Checked now, so that a statement SQLite cannot prepare fails the handler, not
        // the commit.
        let store = self.store.clone();
        let checked = sql.to_string();
        tokio::task::spawn_blocking(move || lock(&store.inner.reader).prepare_cached(&checked).map(drop))
            .await
            .map_err(unavailable)?
            .map_err(|error| StoreError::Statement(error.to_string()))?;
        self.statements.push(Statement::One(sql.to_string(), params.to_vec()));
        Ok(None)
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, StoreError> {
        let (store, sql, params) = (self.store.clone(), sql.to_string(), params.to_vec());
        tokio::task::spawn_blocking(move || super::values::query(&lock(&store.inner.reader), &sql, &params))
            .await
            .map_err(unavailable)?
            .map_err(|error| StoreError::Statement(error.to_string()))
    }

    async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.statements.push(Statement::Batch(sql.to_string()));
        Ok(())
    }

    fn sqlite_at_commit(&mut self, work: crate::store::SqliteWork) -> Result<(), StoreError> {
        self.statements.push(Statement::Work(std::sync::Mutex::new(Some(work))));
        Ok(())
    }

    async fn commit(self: Box<Self>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError> {
        let Self { store, statements } = *self;
        store.commit_unit(statements, writes).await
    }
}

impl SqliteStore {
    /// A transaction for one call: its statements run when it commits.
    pub(super) fn open_transaction(&self) -> Box<dyn StoreTransaction> {
        Box::new(SqliteTransaction { store: self.clone(), statements: Vec::new() })
    }
}

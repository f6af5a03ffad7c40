//! A call's transaction on Postgres (a handler that takes a [`Transaction`](crate::Transaction)).

use std::sync::Arc;

use async_trait::async_trait;

use super::batch::{Announcer, Writes, outcome};
use super::sql::Sql;
use crate::store::{RecordWrite, SqlRow, SqlValue, StoreError, StoreTransaction, unavailable};

/// What toolgate's writes at a handler's transaction's commit run first: their plans as
/// the pool's connections make them (the transaction began with Postgres's defaults).
pub(super) const OUR_PLANS: &str =
    "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off; SET LOCAL jit = off";

/// A call's transaction on Postgres: a pooled connection inside `BEGIN`, on which the
/// handler's statements run as they come and the call's records are written at the
/// commit. Dropped before its commit (the handler failed, the call was cancelled), its
/// connection leaves the pool and closes, and Postgres rolls the transaction back.
pub(super) struct PostgresTransaction {
    pub(super) sql: Arc<Sql>,
    pub(super) announce: Announcer,
    pub(super) client: Option<deadpool_postgres::Object>,
    /// The client was lent to a handler's own code, after the savepoint [`LENT`] that the
    /// commit releases: a release that fails means that code ended the transaction.
    pub(super) lent: bool,
}

/// The savepoint taken before the client is lent to a handler's own code.
const LENT: &str = "toolgate_lent";

impl PostgresTransaction {
    fn client(&self) -> Result<&deadpool_postgres::Object, StoreError> {
        self.client.as_ref().ok_or_else(|| unavailable("the transaction has ended"))
    }
}

/// What Postgres said of a handler's statement; a connection that failed is the store's.
fn statement(error: impl std::fmt::Display) -> StoreError {
    StoreError::Statement(error.to_string())
}

impl Drop for PostgresTransaction {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            // Out of the pool and closed: Postgres rolls back what it had.
            drop(deadpool_postgres::Object::take(client));
        }
    }
}

#[async_trait]
impl StoreTransaction for PostgresTransaction {
    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<Option<u64>, StoreError> {
        let client = self.client()?;
        let rows = client.execute(sql, &super::values::params(params)).await.map_err(statement)?;
        Ok(Some(rows))
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, StoreError> {
        let client = self.client()?;
        let rows = client.query(sql, &super::values::params(params)).await.map_err(statement)?;
        rows.iter().map(|row| super::values::row(row).map_err(statement)).collect()
    }

    async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client()?.batch_execute(sql).await.map_err(|error| StoreError::Statement(error.to_string()))
    }

    async fn lend_postgres(&mut self) -> Result<bool, StoreError> {
        if !self.lent {
            self.client()?.batch_execute(&format!("SAVEPOINT {LENT}")).await.map_err(statement)?;
            self.lent = true;
        }
        Ok(true)
    }

    fn postgres_client(&self) -> Option<&tokio_postgres::Client> {
        if !self.lent {
            return None;
        }
        // The pooled object, its wrapper (which caches statements), then the client.
        self.client.as_ref().map(|object| &***object)
    }

    async fn commit(mut self: Box<Self>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError> {
        let mut versions = vec![0; writes.len()];
        {
            let client = self.client()?;
            if self.lent {
                // Before any write, and alone: had the handler's code committed or rolled
                // back, writes sent with it would run outside any transaction.
                let released = client.batch_execute(&format!("RELEASE SAVEPOINT {LENT}")).await;
                released.map_err(|error| {
                    StoreError::Statement(format!(
                        "the handler's own driver code ended its call's transaction, or left it failed: {error}"
                    ))
                })?;
            }
            // One statement writes them all, a key once per statement: a key written twice
            // is written again by the next.
            let mut left: Vec<usize> = (0..writes.len()).collect();
            while !left.is_empty() {
                let mut keys = std::collections::HashSet::new();
                let (now, later): (Vec<usize>, Vec<usize>) =
                    left.into_iter().partition(|&index| keys.insert(writes[index].key.as_str()));
                let round: Vec<&RecordWrite> = now.iter().map(|&index| &writes[index]).collect();
                let prepared = Writes::prepare(&self.sql, client, &round).await?;
                // Inside the transaction: an unanswered write is a failed transaction.
                let (planned, codes) = futures_util::join!(client.batch_execute(OUR_PLANS), prepared.run(client));
                planned.map_err(unavailable)?;
                let codes = codes.map_err(unavailable)?;
                for ((index, write), code) in now.iter().zip(&round).zip(codes) {
                    versions[*index] = outcome(write.expected, code)?.unwrap_or_default();
                }
                left = later;
            }
            // Past this point the commit may have been applied even if no answer comes back.
            client.batch_execute("COMMIT").await.map_err(|error| StoreError::OutcomeUnknown(error.to_string()))?;
        }
        for (write, version) in writes.iter().zip(&versions) {
            if *version > 0 {
                self.announce.announce(&write.key);
            }
        }
        // Committed: the connection goes back to the pool.
        drop(self.client.take());
        Ok(versions)
    }
}

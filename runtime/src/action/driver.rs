//! The store's own driver inside a call's transaction, for code written for it: the
//! tokio-postgres client inside the call's `BEGIN` ([`Transaction::postgres`]), and on
//! SQLite, rusqlite work run at the call's commit ([`Transaction::sqlite_at_commit`]).

use super::transaction::{failed, gone};
use super::{Transaction, TransactionFuture};
use crate::error::ToolError;

impl Transaction {
    /// The tokio-postgres client the call's transaction runs on, inside its `BEGIN`: a
    /// function of yours taking `&impl GenericClient` (or `&Client`) runs as it is, and
    /// what it writes commits with the call's transition, or not at all. Postgres only
    /// (feature `postgres`); on another store it fails the call with `INTERNAL`.
    ///
    /// The client is lent while the [`PostgresClient`] lives: the `Transaction`'s own
    /// statements fail until it is dropped (they would run on the same connection). Do
    /// not `COMMIT`, `ROLLBACK` or `BEGIN` through it: the call commits the transaction
    /// after the handler, with its records (a call whose transaction was ended under it
    /// fails with `INTERNAL` and writes none of its records). An error of yours returned with `?` is an
    /// `INTERNAL` failure whose text goes to the log only (`From<tokio_postgres::Error>`).
    ///
    /// ```no_run
    /// # use toolgate_runtime::{ToolError, Transaction};
    /// use toolgate_runtime::tokio_postgres::GenericClient;
    ///
    /// // Code written for tokio-postgres, unchanged.
    /// async fn add_line(db: &impl GenericClient, invoice: &str, cents: i64) -> Result<u64, tokio_postgres::Error> {
    ///     db.execute("INSERT INTO lines (invoice, cents) VALUES ($1, $2)", &[&invoice, &cents]).await
    /// }
    /// # use toolgate_runtime::tokio_postgres;
    ///
    /// # async fn handler(tx: Transaction) -> Result<(), ToolError> {
    /// let db = tx.postgres().await?;
    /// add_line(&*db, "INV-7", 12_500).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "postgres")]
    pub async fn postgres(&self) -> Result<PostgresClient, ToolError> {
        let shared = self.slot.0.clone().ok_or_else(gone)?;
        let mut slot = self.open(true).await?;
        let open = slot.open.as_deref_mut().ok_or_else(gone)?;
        if !open.lend_postgres().await.map_err(failed)? {
            return Err(ToolError::internal(
                "`Transaction::postgres` on a store that is not Postgres (serve with `--store postgres://…`)",
            ));
        }
        shared.lent.store(true, std::sync::atomic::Ordering::Release);
        Ok(PostgresClient { slot, shared })
    }

    /// Queues `work`, code of yours written for rusqlite, to run when the call commits:
    /// on the SQLite file's one writer, inside the call's savepoint of the group's
    /// transaction, after the call's earlier statements and before its records — so what
    /// it writes commits with the call's transition, or not at all. A function taking
    /// `&rusqlite::Connection` runs as it is. SQLite only; on another store it fails the
    /// call with `INTERNAL`.
    ///
    /// It runs **after the handler returned**: the handler sees nothing of its result,
    /// and nothing it writes is visible to the handler's queries (which read what is
    /// committed). What it returns is dropped; an error, a panic, or running past
    /// [`SQLITE_WORK_LIMIT`](crate::store::SQLITE_WORK_LIMIT) (every commit waits on the
    /// writer meanwhile: its SQL is interrupted there) fails the call with `INTERNAL`, its
    /// text in the log only, and nothing of the call is kept; the other calls committing
    /// with it are not touched. It may not begin, commit or roll back a transaction, or
    /// name a savepoint (SQLite refuses those statements to it).
    ///
    /// ```no_run
    /// # use toolgate_runtime::{ToolError, Transaction};
    /// use toolgate_runtime::rusqlite;
    ///
    /// // Code written for rusqlite, unchanged.
    /// fn add_line(db: &rusqlite::Connection, invoice: &str, cents: i64) -> rusqlite::Result<usize> {
    ///     db.execute("INSERT INTO lines (invoice, cents) VALUES (?1, ?2)", (invoice, cents))
    /// }
    ///
    /// # async fn handler(tx: Transaction) -> Result<(), ToolError> {
    /// tx.sqlite_at_commit(|db| add_line(db, "INV-7", 12_500)).await?;
    /// # Ok(()) }
    /// ```
    pub fn sqlite_at_commit<F, T>(&self, work: F) -> TransactionFuture<'_, ()>
    where
        F: FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        Box::pin(async move {
            let mut slot = self.open(true).await?;
            let open = slot.open.as_deref_mut().ok_or_else(gone)?;
            open.sqlite_at_commit(Box::new(move |connection| work(connection).map(drop))).map_err(failed)
        })
    }
}

/// The tokio-postgres client of a call's transaction, lent to the handler
/// ([`Transaction::postgres`]): it dereferences to [`tokio_postgres::Client`], which
/// implements `GenericClient`. The transaction's own statements wait until it is dropped.
#[cfg(feature = "postgres")]
pub struct PostgresClient {
    slot: tokio::sync::OwnedMutexGuard<super::transaction_slot::Slot>,
    shared: std::sync::Arc<super::transaction_slot::Shared>,
}

#[cfg(feature = "postgres")]
impl std::ops::Deref for PostgresClient {
    type Target = tokio_postgres::Client;

    fn deref(&self) -> &tokio_postgres::Client {
        // Checked when lent; the slot's lock, which this holds, keeps the transaction open
        // (the commit takes it under the same lock).
        self.slot.open.as_deref().and_then(|open| open.postgres_client()).expect("a lent client stays in its slot")
    }
}

#[cfg(feature = "postgres")]
impl Drop for PostgresClient {
    fn drop(&mut self) {
        self.shared.lent.store(false, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(feature = "postgres")]
impl std::fmt::Debug for PostgresClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PostgresClient")
    }
}

/// What rusqlite said fails the call with `INTERNAL`: its text goes to the log, not to
/// the model.
impl From<rusqlite::Error> for ToolError {
    fn from(error: rusqlite::Error) -> Self {
        ToolError::internal(error)
    }
}

/// What Postgres said fails the call with `INTERNAL`: its text goes to the log, not to
/// the model.
#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for ToolError {
    fn from(error: tokio_postgres::Error) -> Self {
        ToolError::internal(error)
    }
}

//! [`Transaction`]: the database transaction a call commits in, for a handler that writes
//! tables of yours kept beside toolgate's (in the SQLite file, or the Postgres database).

use serde::de::DeserializeOwned;

use super::transaction_slot::Slot;
use super::{Ctx, FromCtx, TransactionSlot};
use crate::error::ToolError;
use crate::store::SqlValue;

/// The database transaction the call commits in: your rows and the instance's state,
/// context, history entry and idempotency record are committed together, or not at all.
///
/// A handler parameter, on a server whose store keeps tables of yours (the SQLite file or
/// Postgres; a server on memory or Redis refuses to start with one). Statements bind
/// parameters as `$1`, `$2`, … ([`SqlValue`]) on both.
///
/// - The gate judges the call before any of it runs: a refused call opens no
///   transaction and writes nothing.
/// - A handler that returns an error, panics, times out or is cancelled leaves nothing
///   of what it wrote.
/// - The commit checks the version of the instance the call was admitted on (a
///   transitioning call holds its lease from admission to commit): a call that lost a
///   race to another writes nothing. A handler that only queries commits no write.
///
/// On **Postgres** each statement runs when it is called, in a transaction opened for the
/// call (`BEGIN` on a pooled connection): queries see the call's own writes, and
/// [`Transaction::execute`] returns how many rows a statement changed. On **SQLite** the
/// file has one writer, which commits many calls together (group commit) and so cannot
/// wait on one handler: statements are checked when called and run when the call
/// commits, first in its part of the group's transaction; [`Transaction::execute`]
/// returns `None`, and queries read what is committed.
///
/// Code written for the store's own driver runs in the same transaction, as it is:
/// [`Transaction::postgres`] lends the tokio-postgres client inside the call's `BEGIN`;
/// on SQLite, [`Transaction::sqlite_at_commit`] runs a rusqlite closure at the commit,
/// inside the call's savepoint (the handler sees nothing of its result). sqlx's
/// transactions are not offered: sqlx keeps connections of its own, outside the call's.
///
/// ```no_run
/// # use toolgate_runtime::{ToolError, Transaction};
/// # async fn f(tx: Transaction) -> Result<(), ToolError> {
/// tx.execute("UPDATE invoices SET status = 'paid' WHERE id = $1", &["INV-7".into()]).await?;
/// # Ok(()) }
/// ```
pub struct Transaction {
    pub(super) slot: TransactionSlot,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transaction")
    }
}

pub(super) fn gone() -> ToolError {
    ToolError::internal("the call's transaction is gone")
}

pub(super) fn failed(error: crate::store::StoreError) -> ToolError {
    crate::error::store_failure(error)
}

impl Transaction {
    /// A handle on the transaction of `slot` (a transactional hook's).
    pub(crate) fn over(slot: TransactionSlot) -> Self {
        Self { slot }
    }

    /// The call's transaction, opened first if needed; `writes`: what runs in it may write.
    pub(super) async fn open(&self, writes: bool) -> Result<tokio::sync::OwnedMutexGuard<Slot>, ToolError> {
        let Some(shared) = &self.slot.0 else {
            return Err(ToolError::internal("a Transaction outside a call that takes one"));
        };
        if shared.lent.load(std::sync::atomic::Ordering::Acquire) {
            // Waiting would wait for the handler itself, which holds the driver.
            return Err(ToolError::internal(
                "a Transaction's statement while its `PostgresClient` is held: drop the client first",
            ));
        }
        let mut slot = shared.slot.clone().lock_owned().await;
        if slot.ended {
            return Err(ToolError::internal(
                "a statement after its call committed: a Transaction is used only while its handler runs",
            ));
        }
        if slot.open.is_none() {
            if let Some(tables) = &slot.tables {
                tables.create(slot.store.as_ref()).await.map_err(failed)?;
            }
            let Some(tables) = slot.store.capabilities().tables else {
                return Err(ToolError::internal("the server's store keeps no tables of yours"));
            };
            let opened = tables.transaction().await.map_err(failed)?;
            slot.open = Some(opened);
        }
        slot.wrote |= writes;
        Ok(slot)
    }

    /// Runs the statement `sql`, its parameters `$1`, `$2`, … taken from `params`, in the
    /// call's transaction. Postgres answers how many rows it changed; SQLite, which runs
    /// it at the commit, `None`. A statement the database refuses fails the call with
    /// `INTERNAL` (what the database said goes to the log, not to the model), and nothing
    /// of the call is kept.
    pub fn execute<'a>(&'a self, sql: &'a str, params: &'a [SqlValue]) -> TransactionFuture<'a, Option<u64>> {
        Box::pin(async move {
            let mut slot = self.open(true).await?;
            let open = slot.open.as_deref_mut().ok_or_else(gone)?;
            let executed = open.execute(sql, params).await;
            executed.map_err(failed)
        })
    }

    /// Runs the query `sql` and reads each row as a `T` (a struct deriving `Deserialize`
    /// whose fields are the columns' names): integers, reals, text, booleans and `NULL`;
    /// on Postgres also `numeric` (the text of its exact value), `timestamptz` (RFC 3339,
    /// UTC), `timestamp`, `date` and `json`/`jsonb` (as JSON).
    pub fn query<'a, T: DeserializeOwned + Send + 'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> TransactionFuture<'a, Vec<T>> {
        Box::pin(async move {
            let mut slot = self.open(false).await?;
            let open = slot.open.as_deref_mut().ok_or_else(gone)?;
            let rows = open.query(sql, params).await.map_err(failed)?;
            drop(slot);
            rows.into_iter()
                .map(|row| {
                    serde_json::from_value(serde_json::Value::Object(row))
                        .map_err(|error| ToolError::internal(format_args!("a row of `{sql}` does not read: {error}")))
                })
                .collect()
        })
    }

    /// [`Transaction::query`]'s first row, if there is one.
    pub fn query_opt<'a, T: DeserializeOwned + Send + 'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> TransactionFuture<'a, Option<T>> {
        Box::pin(async move { Ok(self.query(sql, params).await?.into_iter().next()) })
    }
}

/// What a [`Transaction`]'s statement returns: a future to await (boxed, so that a
/// handler's own future stays `Send` whatever the statement borrows).
pub type TransactionFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// The call's transaction, for a handler on a store that keeps tables of yours.
impl FromCtx for Transaction {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(Self { slot: ctx.transaction.clone() })
    }
}

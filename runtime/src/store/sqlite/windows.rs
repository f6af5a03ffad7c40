//! Rate-limit windows in the file: a restart does not give a limit's calls back.

use rusqlite::{TransactionBehavior, params};

use super::store::SqliteStore;
use crate::store::{StoreError, now_ms, unavailable};

impl SqliteStore {
    /// Admits one call under `window` (durably, like a commit: a restart does not give a
    /// limit's calls back), or says in how many milliseconds the oldest leaves it.
    pub(super) fn spend_window_blocking(
        &self,
        window: &str,
        calls: u32,
        per_ms: u64,
    ) -> Result<Result<String, u64>, StoreError> {
        let now = now_ms() as i64;
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
        transaction
            .execute("DELETE FROM windows WHERE window = ?1 AND until_ms <= ?2", params![window, now])
            .map_err(unavailable)?;
        let (admitted, leaves): (i64, Option<i64>) = transaction
            .query_row("SELECT COUNT(*), MIN(until_ms) FROM windows WHERE window = ?1", params![window], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map_err(unavailable)?;
        if admitted >= i64::from(calls) {
            return Ok(Err(leaves.map_or(1, |until| (until - now).max(1) as u64)));
        }
        // Tickets come from the store's one counter, so they never repeat.
        let ticket: i64 = transaction
            .query_row("UPDATE revision SET last = last + 1 WHERE id = 1 RETURNING last", [], |row| row.get(0))
            .map_err(unavailable)?;
        let until = now.saturating_add(per_ms.max(1).min(i64::MAX as u64) as i64);
        transaction
            .execute(
                "INSERT INTO windows (window, ticket, until_ms) VALUES (?1, ?2, ?3)",
                params![window, ticket, until],
            )
            .map_err(unavailable)?;
        transaction.commit().map_err(unavailable)?;
        Ok(Ok(ticket.to_string()))
    }
}

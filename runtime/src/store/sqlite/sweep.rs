//! Deleting what expired: records (with their histories) and calls that left their
//! rate-limit windows, when the store opens and then every [`SWEEP_EVERY`] commits.

use rusqlite::params;

use super::store::SqliteStore;
use crate::store::now_ms;

/// Expired records are swept once every this many commits (and when the store opens).
pub const SWEEP_EVERY: u64 = 1024;

impl SqliteStore {
    /// Deletes expired records (with their histories) and the calls that left their
    /// rate-limit windows.
    pub(super) fn sweep(&self) -> rusqlite::Result<usize> {
        let connection = self.connection();
        let now = now_ms() as i64;
        connection.execute(
            "DELETE FROM history WHERE key IN (SELECT key FROM records WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1)",
            params![now],
        )?;
        let records = connection
            .execute("DELETE FROM records WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1", params![now])?;
        let calls = connection.execute("DELETE FROM windows WHERE until_ms <= ?1", params![now])?;
        Ok(records + calls)
    }
}

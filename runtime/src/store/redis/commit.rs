//! A commit: one script that checks the marker, Redis's clock, the lease and the version,
//! then writes the record, its history, its counters and its place in the index of when
//! instances are next due, and advances the clock ([`rollback`](super::rollback)); then,
//! where a replica keeps the write, the wait for it.

use redis::aio::ConnectionManager;

use super::durability::{self, MARKER_KEY, RedisDurability};
use super::keys::{COUNTS_NONE, DUE_KEY, counts_key, history_key, lease_key, record_key, revision_key};
use super::rollback::CLOCK_KEY;
use super::store::RedisStore;
use crate::store::{HistoryEntry, HistoryRetention, Snapshot, StoreError, StoreKey, counts, unavailable};

impl RedisStore {
    /// Compare-and-set in one script; with `fence`, only while the key's lease holds it;
    /// with `entry`, appending it to the key's history (trimmed by the retention).
    pub(super) async fn write(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        fence: &str,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        self.marker.check()?;
        let before = self.marker.clock.highest();
        let mut connection = self.connection.clone();
        let text = serde_json::to_string(&Snapshot { version: 0, ..next.clone() }).map_err(unavailable)?;
        let expires = next.expires_at_ms.map(|ms| ms.to_string()).unwrap_or_default();
        let (entry, most, oldest) = match entry {
            Some((entry, retention)) => (
                serde_json::to_string(entry).map_err(unavailable)?,
                retention.entries().map(|most| most.to_string()).unwrap_or_default(),
                retention.age().map(|_| retention.oldest_kept_ms(entry.at_ms()).to_string()).unwrap_or_default(),
            ),
            None => Default::default(),
        };
        let counted = counts::counted(key, next);
        let (counters, names) = counted.as_ref().map(|c| (counts_key(&c.prefix), c.suffixes())).unwrap_or_default();
        let (applied, version, clock): (u8, u64, u64) = self
            .scripts
            .compare_and_set
            .key(record_key(key))
            .key(revision_key(key))
            .key(lease_key(key))
            .key(history_key(key))
            .key(MARKER_KEY)
            .key(if counted.is_some() { counters } else { COUNTS_NONE.to_string() })
            .key(CLOCK_KEY)
            .key(DUE_KEY)
            .arg(expected_version)
            .arg(text)
            .arg(expires)
            .arg(fence)
            .arg(key.as_str())
            .arg(entry)
            .arg(most)
            .arg(oldest)
            .arg(&self.marker.id)
            .arg(names)
            .arg(before)
            .arg(next.wake_at_ms().map(|due| due.to_string()).unwrap_or_default())
            .invoke_async(&mut connection)
            .await
            .map_err(commit_failure)?;
        match applied {
            3 => return Err(self.marker.seen(None).unwrap_err()),
            4 => return Err(self.marker.clock.gone_back(before, clock)),
            _ => {}
        }
        if applied == 1 && self.durability == RedisDurability::Replica {
            self.replicated(&mut connection).await?;
        }
        if applied == 1 {
            self.marker.clock.committed(clock);
        }
        match applied {
            1 => Ok(version),
            2 => Err(StoreError::LeaseLost),
            _ => Err(StoreError::Conflict { expected: expected_version, found: version }),
        }
    }

    /// Waits until a replica has every write this store's connection made (`WAIT 1`): a
    /// write none acknowledges in time may be lost with Redis, and is not reported as done.
    async fn replicated(&self, connection: &mut ConnectionManager) -> Result<(), StoreError> {
        let wait = durability::REPLICA_WAIT.as_millis() as u64;
        let acknowledged: u32 =
            redis::cmd("WAIT").arg(1).arg(wait).query_async(connection).await.map_err(commit_failure)?;
        if acknowledged == 0 {
            return Err(StoreError::OutcomeUnknown(format!(
                "no Redis replica acknowledged the write within {wait} ms: it may be lost if Redis fails over"
            )));
        }
        Ok(())
    }
}

/// A failed commit: refused before it was sent, or lost on the way — then it may have been
/// applied, and must not be reported as not having happened.
fn commit_failure(error: redis::RedisError) -> StoreError {
    if error.is_connection_dropped() || error.is_timeout() || error.is_io_error() {
        StoreError::OutcomeUnknown(error.to_string())
    } else {
        StoreError::Unavailable(error.to_string())
    }
}

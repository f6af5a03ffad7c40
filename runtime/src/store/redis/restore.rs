//! After Redis was restored from a backup, before any server starts on it.
//!
//! A backup holds the key counters as they were when it was taken: every key minted after
//! it (`PAY-4`, `PAY-5`) is unknown to it, and a server starting on it would mint those keys
//! again. Running servers notice the going back ([`rollback`](super::rollback)); after a
//! full restart nobody remembers, so the restore procedure prevents it instead:
//! [`RedisStoreBuilder::restored_from_backup`] (`<server> redis-restored --store URL`)
//!
//! 1. writes a new marker: a server still running on the old data fails closed (it must be
//!    restarted, and then serves the restored data under the new marker);
//! 2. advances every key counter by a margin ([`DEFAULT_MINT_MARGIN`] unless told): the
//!    next key is past every key minted between the backup and the loss, as long as fewer
//!    than the margin were minted from that counter meanwhile;
//! 3. raises the floor of counters the backup does not have (a tenant whose first key was
//!    minted after the backup) by the same margin: such a counter starts past it
//!    (`toolgate:{mint-floor}`, read with the counter, in the same round trip).
//!
//! Running it twice only advances the counters further: safe to run again after a failure.

use super::durability::MARKER_KEY;
use super::keys::{COUNTER_RECORDS, MINT_FLOOR_KEY, stored_key};
use super::store::{RedisStore, RedisStoreBuilder};
use crate::store::{FlowStore, Snapshot, StoreError, StoreKey, unavailable};

/// How far a restore advances every key counter by default: more than any counter mints
/// between a backup and its restore at eleven keys a second for a day (a daily backup),
/// with room for 18 million million restores before a `u64` runs out. Pass a larger one for
/// an older backup or busier counters.
pub const DEFAULT_MINT_MARGIN: u64 = 1_000_000;

/// What [`RedisStoreBuilder::restored_from_backup`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The marker the restored data is served under now.
    pub marker: String,
    /// How far every counter advanced.
    pub margin: u64,
    /// Each key counter in the backup (its store key), with its last number before and
    /// after: the next key minted from it is the number after, plus one.
    pub counters: Vec<(String, u64, u64)>,
    /// Where a counter the backup does not have starts: past this.
    pub floor: u64,
}

impl RedisStoreBuilder {
    /// Prepares Redis, just restored from a backup, for the servers to start on it: a new
    /// marker, and every key counter (and the floor of those the backup lacks) advanced by
    /// `margin` ([`DEFAULT_MINT_MARGIN`], say: more keys than any counter minted between the
    /// backup and the loss), so that no key minted after the backup was taken is minted
    /// again; a counter the backup lacks starts past the sum of the margins so far. Run it
    /// once, before the servers start: a server still running fails closed until it is
    /// restarted. Running it again only advances the counters further. The restore
    /// procedure: `docs/stores-and-replicas.md`.
    pub async fn restored_from_backup(self, margin: u64) -> Result<Restored, StoreError> {
        let client = self.client()?;
        let mut connection = client.get_multiplexed_async_connection().await.map_err(unavailable)?;
        // The new marker first: a server still running on the old one mints nothing more.
        let marker = uuid::Uuid::new_v4().simple().to_string();
        redis::cmd("SET").arg(MARKER_KEY).arg(&marker).query_async::<()>(&mut connection).await.map_err(unavailable)?;
        let floor: u64 = redis::cmd("INCRBY")
            .arg(MINT_FLOOR_KEY)
            .arg(margin)
            .query_async(&mut connection)
            .await
            .map_err(unavailable)?;
        tracing::warn!(%marker, margin, floor, "Redis was restored from a backup: a new marker, key counters advanced");
        let store = RedisStore::with_client(client, self.accept_volatile).await?;
        let mut counters = Vec::new();
        for key in counter_keys(&mut connection).await? {
            if let Some((before, after)) = advance(&store, &key, margin).await? {
                counters.push((key.as_str().to_string(), before, after));
            }
        }
        counters.sort();
        Ok(Restored { marker, margin, counters, floor })
    }
}

/// Every key counter in Redis, found with `SCAN`.
async fn counter_keys(connection: &mut redis::aio::MultiplexedConnection) -> Result<Vec<StoreKey>, StoreError> {
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(COUNTER_RECORDS)
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await
            .map_err(unavailable)?;
        keys.extend(found.iter().filter_map(|key| stored_key(key)).filter(StoreKey::is_mint_counter));
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}

/// Advances the counter at `key` by `margin`: its last number before and after (none if
/// it is gone).
async fn advance(store: &RedisStore, key: &StoreKey, margin: u64) -> Result<Option<(u64, u64)>, StoreError> {
    loop {
        let current = store.load(key).await?;
        let Some(record) = &current.record else { return Ok(None) };
        let last = record.get("n").and_then(serde_json::Value::as_u64).unwrap_or(0);
        let after = last.saturating_add(margin);
        let next = Snapshot { record: Some(serde_json::json!({ "n": after })), ..current.next() };
        match store.commit(key, current.version, &next, None, None).await {
            Ok(_) => return Ok(Some((last, after))),
            Err(StoreError::Conflict { .. }) => continue,
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::read::unused_counter;
    use super::*;

    #[test]
    fn only_key_counters_start_past_the_floor() {
        assert!(StoreKey::minted("payment", Some("acme")).is_mint_counter());
        assert!(StoreKey::legacy_minted_for_owner("quote", "digest").is_mint_counter());
        assert!(!StoreKey::instance("payment", "PAY-1").is_mint_counter());
        assert_eq!(unused_counter(None), Snapshot::default());
        assert_eq!(unused_counter(Some(0)), Snapshot::default());
        assert_eq!(unused_counter(Some(7)).record, Some(serde_json::json!({ "n": 7 })));
    }
}

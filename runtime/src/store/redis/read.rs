//! Reading a record with what tells whether it can be trusted (the marker and the clock),
//! in one round trip.

use redis::aio::ConnectionManager;

use super::durability::MARKER_KEY;
use super::keys::{MINT_FLOOR_KEY, record_key};
use super::rollback::CLOCK_KEY;
use crate::store::{Snapshot, StoreError, StoreKey, unavailable};

/// A record's version and snapshot as stored, if any.
pub(super) type StoredRecord = (Option<u64>, Option<String>);

/// A record with what tells whether it can be trusted — the marker and the clock — read in
/// one round trip; and for a key counter, the floor it starts past.
pub(super) async fn load(
    connection: &mut ConnectionManager,
    key: &StoreKey,
) -> Result<(StoredRecord, Option<String>, Option<u64>, Option<u64>), StoreError> {
    let mut pipe = redis::pipe();
    pipe.cmd("HMGET").arg(record_key(key)).arg("v").arg("s").cmd("GET").arg(MARKER_KEY).cmd("GET").arg(CLOCK_KEY);
    if !key.is_mint_counter() {
        let (record, marker, clock) = pipe.query_async(connection).await.map_err(unavailable)?;
        return Ok((record, marker, clock, None));
    }
    pipe.cmd("GET").arg(MINT_FLOOR_KEY);
    pipe.query_async(connection).await.map_err(unavailable)
}

/// What a key counter never written reads as: its last number the floor (none before a
/// restore). A counter holds `{"n": last}` (`Records::mint`).
pub(super) fn unused_counter(floor: Option<u64>) -> Snapshot {
    match floor.filter(|floor| *floor > 0) {
        Some(floor) => Snapshot { record: Some(serde_json::json!({ "n": floor })), ..Snapshot::default() },
        None => Snapshot::default(),
    }
}

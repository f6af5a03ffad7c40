//! Reading a record with what tells whether it can be trusted (the marker and the clock),
//! in one round trip.

use redis::aio::ConnectionManager;

use super::durability::MARKER_KEY;
use super::keys::{MINT_FLOOR_KEY, record_key};
use super::rollback::CLOCK_KEY;
use crate::store::{Snapshot, StoreError, StoreKey, unavailable};

/// A record's version and snapshot as stored, if any.
pub(super) type StoredRecord = (Option<u64>, Option<String>);

/// A record as stored, the marker, the clock, and for a key counter its floor.
pub(super) type Loaded = (StoredRecord, Option<String>, Option<u64>, Option<u64>);

/// A record with what tells whether it can be trusted — the marker and the clock — read in
/// one round trip; and for a key counter, the floor it starts past.
pub(super) async fn load(connection: &mut ConnectionManager, key: &StoreKey) -> Result<Loaded, StoreError> {
    let mut pipe = redis::pipe();
    read_commands(&mut pipe, key);
    if !key.is_mint_counter() {
        let (record, marker, clock) = pipe.query_async(connection).await.map_err(unavailable)?;
        return Ok((record, marker, clock, None));
    }
    pipe.query_async(connection).await.map_err(unavailable)
}

/// The commands [`load`] sends: the record, the marker, the clock, and a key counter's floor.
fn read_commands(pipe: &mut redis::Pipeline, key: &StoreKey) {
    pipe.cmd("HMGET").arg(record_key(key)).arg("v").arg("s").cmd("GET").arg(MARKER_KEY).cmd("GET").arg(CLOCK_KEY);
    if key.is_mint_counter() {
        pipe.cmd("GET").arg(MINT_FLOOR_KEY);
    }
}

/// The lease `lease` set to `token` for `ttl_ms` (over whoever holds it, `from_holder`;
/// only if nobody does, otherwise), then the record read as [`load`] reads it: one round
/// trip, the commands run in that order. Whether the lease was taken, and what was read
/// (under it if so; as committed, otherwise).
pub(super) async fn lease_and_load(
    connection: &mut ConnectionManager,
    key: &StoreKey,
    (lease, token, ttl_ms): (&str, &str, u64),
    from_holder: bool,
) -> Result<(bool, Loaded), StoreError> {
    let mut pipe = redis::pipe();
    let set = pipe.cmd("SET").arg(lease).arg(token);
    if !from_holder {
        set.arg("NX");
    }
    set.arg("PX").arg(ttl_ms);
    read_commands(&mut pipe, key);
    if !key.is_mint_counter() {
        let (taken, record, marker, clock): (Option<String>, _, _, _) =
            pipe.query_async(connection).await.map_err(unavailable)?;
        return Ok((taken.is_some(), (record, marker, clock, None)));
    }
    let (taken, record, marker, clock, floor): (Option<String>, _, _, _, _) =
        pipe.query_async(connection).await.map_err(unavailable)?;
    Ok((taken.is_some(), (record, marker, clock, floor)))
}

/// What a key counter never written reads as: its last number the floor (none before a
/// restore). A counter holds `{"n": last}` (`Records::mint`).
pub(super) fn unused_counter(floor: Option<u64>) -> Snapshot {
    match floor.filter(|floor| *floor > 0) {
        Some(floor) => Snapshot { record: Some(serde_json::json!({ "n": floor })), ..Snapshot::default() },
        None => Snapshot::default(),
    }
}

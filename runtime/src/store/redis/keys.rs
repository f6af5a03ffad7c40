//! Where the store keeps what: every Redis key it names is formatted here.

use crate::store::StoreKey;

/// The sorted set of instances' deadlines: key → `due_at_ms`.
pub(super) const DUE_KEY: &str = "toolgate:due";

pub(super) fn record_key(key: &StoreKey) -> String {
    format!("toolgate:{{{key}}}:record")
}

/// The store key of a record's Redis key ([`record_key`]'s inverse); `None` for another.
pub(super) fn stored_key(record_key: &str) -> Option<StoreKey> {
    let inner = record_key.strip_prefix("toolgate:{")?.strip_suffix("}:record")?;
    Some(StoreKey::from_stored(inner.to_string()))
}

/// A `SCAN` pattern of the records of key counters ([`StoreKey::minted`], and an older
/// toolgate's per-owner ones, both `minted…`), and perhaps others: filter with
/// [`StoreKey::is_mint_counter`].
pub(super) const COUNTER_RECORDS: &str = "toolgate:{minted*}:record";

pub(super) fn revision_key(key: &StoreKey) -> String {
    format!("toolgate:{{{key}}}:revision")
}

/// The hash of counters about one machine in one scope (`prefix`, [`counts::prefix`](crate::store::counts::prefix)):
/// what follows the prefix → instances.
pub(super) fn counts_key(prefix: &str) -> String {
    format!("toolgate:{{counts:{prefix}}}")
}

/// The counters' key a commit names when its record is counted under none (never written).
pub(super) const COUNTS_NONE: &str = "toolgate:{counts:none}";

pub(super) fn history_key(key: &StoreKey) -> String {
    format!("toolgate:{{{key}}}:history")
}

pub(super) fn window_key(window: &str) -> String {
    format!("toolgate:{{window:{window}}}:calls")
}

pub(super) fn lease_key(key: &StoreKey) -> String {
    format!("toolgate:{{{key}}}:lease")
}

/// Where counters the backup does not have start: past this.
pub(super) const MINT_FLOOR_KEY: &str = "toolgate:{mint-floor}";

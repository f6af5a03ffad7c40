//! What the suite's checks share: their keys, and transitions with history entries.

use std::time::Duration;

use crate::store::{FlowLease, FlowStore, HistoryEntry, HistoryRetention, Snapshot, StoreError, StoreKey, Transition};

pub(super) fn key(name: &str) -> StoreKey {
    StoreKey::connection(&format!("conformance-{name}"))
}

pub(super) const SHORT: Duration = Duration::from_millis(100);

/// A history entry of the transition `from` → `to` by `principal`, committed at `at_ms`.
pub(super) fn entry_of(principal: &str, from: &str, to: &str, call_id: &str, at_ms: u64) -> HistoryEntry {
    let principal = crate::auth::Principal::new(principal).with_tenant("conformance");
    let transition = Transition {
        principal: Some(&principal),
        from,
        to,
        event: "GO",
        tool: "conformance_go",
        call_id: call_id.to_string(),
        note: Some(format!("note of {call_id}")),
        context_changed: call_id.ends_with('1'),
    };
    HistoryEntry::new(transition, at_ms)
}

/// Commits `to` over `version` with its history entry (under `lease` if given).
pub(super) async fn transition<S: FlowStore>(
    store: &S,
    record: &StoreKey,
    version: u64,
    entry: &HistoryEntry,
    lease: Option<&FlowLease>,
    retention: HistoryRetention,
) -> Result<u64, StoreError> {
    let next = Snapshot::default().with_state("m", &entry.to);
    store.commit_with_history(record, version, &next, lease, entry, retention).await
}

pub(super) fn call_ids(entries: &[HistoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.call_id.as_str()).collect()
}

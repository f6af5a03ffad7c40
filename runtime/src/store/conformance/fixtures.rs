//! What the suite's checks share: their keys, and transitions with history entries.

use std::time::Duration;

use crate::store::{
    FlowLease, FlowStore, HistoryEntry, HistoryRetention, Hold, Snapshot, StoreError, StoreKey, Transition,
};

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
    store.commit(record, version, &next, lease, Some((entry, retention))).await
}

pub(super) fn call_ids(entries: &[HistoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.call_id.as_str()).collect()
}

/// The record's lease, waited for ([`Hold::Wait`]).
pub(super) async fn lease<S: FlowStore>(store: &S, record: &StoreKey) -> Result<FlowLease, StoreError> {
    Ok(store.begin(record, Hold::Wait).await?.leased()?.0)
}

/// The record as committed, and its lease if it was free ([`Hold::IfFree`]).
pub(super) async fn try_lease<S: FlowStore>(
    store: &S,
    record: &StoreKey,
) -> Result<(Snapshot, Option<FlowLease>), StoreError> {
    let step = store.begin(record, Hold::IfFree).await?;
    Ok((step.loaded, step.lease))
}

/// The record's lease, taken from its holder ([`Hold::TakeOver`]).
pub(super) async fn take_over<S: FlowStore>(store: &S, record: &StoreKey) -> Result<FlowLease, StoreError> {
    Ok(store.begin(record, Hold::TakeOver).await?.leased()?.0)
}

/// The record's history, or `None` for a store that keeps none.
pub(super) async fn history_of<S: FlowStore>(
    store: &S,
    record: &StoreKey,
) -> Result<Option<Vec<HistoryEntry>>, StoreError> {
    match store.capabilities().history {
        Some(histories) => histories.history(record).await.map(Some),
        None => Ok(None),
    }
}

/// One call spent from a rate window, or `None` for a store that keeps none.
pub(super) async fn spend<S: FlowStore>(
    store: &S,
    window: &str,
    calls: u32,
    per_ms: u64,
) -> Result<Option<Result<String, u64>>, StoreError> {
    match store.capabilities().windows {
        Some(windows) => windows.spend(window, calls, per_ms).await.map(Some),
        None => Ok(None),
    }
}

/// Gives back a call [`spend`] admitted.
pub(super) async fn refund<S: FlowStore>(store: &S, window: &str, ticket: &str) -> Result<(), StoreError> {
    match store.capabilities().windows {
        Some(windows) => windows.refund(window, ticket).await,
        None => Ok(()),
    }
}

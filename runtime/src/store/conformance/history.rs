//! Histories: appended with their transitions, in commit order, trimmed by retention.

use std::time::Duration;

use super::fixtures::{SHORT, call_ids, entry_of, history_of, key, lease, transition};
use crate::store::{FlowStore, HistoryRetention, Snapshot, StoreError, StoreKey, now_ms};

/// A store that keeps no history (no [`Capabilities::history`](crate::store::Capabilities::history))
/// still commits transitions; the history checks are then skipped. Whether the rest of the
/// suite runs.
pub(super) async fn a_store_without_history_says_so<S: FlowStore>(store: &S) -> bool {
    let record = key("history-kept");
    let committed =
        transition(store, &record, 0, &entry_of("a", "x", "y", "kept-1", now_ms()), None, Default::default())
            .await
            .expect("a transition commits whether or not its history is kept");
    assert_eq!(store.load(&record).await.unwrap().version, committed);
    let history = history_of(store, &record).await.expect("history");
    let keeps = store.capabilities().history.is_some();
    assert_eq!(history.is_some(), keeps, "the capability and the history disagree: {history:?}");
    keeps
}

/// Entries read back oldest first, exactly as appended, whether the commit held a lease
/// or not; a commit without an entry (a flow's, a challenge's) appends none.
pub(super) async fn history_reads_back_in_commit_order<S: FlowStore>(store: &S) {
    let record = key("history-order");
    assert_eq!(history_of(store, &record).await.unwrap(), Some(Vec::new()), "a record never committed has no history");
    let now = now_ms();
    let first = entry_of("alice", "draft", "review", "order-1", now);
    let second = entry_of("carol", "review", "approved", "order-2", now);
    let third = entry_of("bob", "approved", "review", "order-3", now + 1);
    let v1 = transition(store, &record, 0, &first, None, Default::default()).await.unwrap();
    let lease = lease(store, &record).await.unwrap();
    let v2 = transition(store, &record, v1, &second, Some(&lease), Default::default()).await.unwrap();
    drop(lease);
    let v3 = store.commit(&record, v2, &Snapshot::default().with_state("m", "approved"), None, None).await.unwrap();
    transition(store, &record, v3, &third, None, Default::default()).await.unwrap();
    let history = history_of(store, &record).await.unwrap().unwrap();
    assert_eq!(history, vec![first, second, third], "entries come back as written, in commit order");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "review");
}

/// A transition whose commit fails — over a stale version — leaves the history as it was.
pub(super) async fn a_failed_commit_appends_no_history<S: FlowStore>(store: &S) {
    let record = key("history-atomic");
    let v1 =
        transition(store, &record, 0, &entry_of("alice", "a", "b", "atomic-1", now_ms()), None, Default::default())
            .await
            .unwrap();
    let stale =
        transition(store, &record, 0, &entry_of("bob", "a", "c", "atomic-stale", now_ms()), None, Default::default())
            .await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: 0, found: v1 }));
    let lease = lease(store, &record).await.unwrap();
    let stale = entry_of("bob", "a", "c", "atomic-stale-leased", now_ms());
    assert!(transition(store, &record, v1 + 1_000, &stale, Some(&lease), Default::default()).await.is_err());
    drop(lease);
    let history = history_of(store, &record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["atomic-1"], "a failed commit appended an entry");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "b");
}

/// Many transitions from one version at once: one commits, and its entry is the only one
/// appended — no entry without its transition.
pub(super) async fn concurrent_transitions_from_one_version_append_one_entry<S: FlowStore + Clone>(store: &S) {
    let record = key("history-concurrent");
    let base =
        transition(store, &record, 0, &entry_of("alice", "a", "open", "base", now_ms()), None, Default::default())
            .await
            .unwrap();
    let writers: Vec<_> = (0..16)
        .map(|writer| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let call_id = format!("writer-{writer}");
                let entry = entry_of("bob", "open", &call_id, &call_id, now_ms());
                transition(&store, &record, base, &entry, None, Default::default()).await.ok().map(|_| call_id)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        winners.extend(writer.await.unwrap());
    }
    assert_eq!(winners.len(), 1, "one transition over version {base}, not {winners:?}");
    let history = history_of(store, &record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["base", winners[0].as_str()]);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), winners[0]);
}

/// Many records moved at once — as a store that commits the calls of a moment together
/// (one statement, one transaction for many records) sees them — each in three
/// transitions, a stale writer beside each: every record ends at its own third version
/// with its own last two entries (the retention), and every stale writer is refused.
pub(super) async fn transitions_on_many_records_at_once_each_keep_their_own<S: FlowStore + Clone>(store: &S) {
    const RECORDS: usize = 32;
    const STALE_AHEAD: u64 = 1_000_000_000;
    let records: Vec<StoreKey> = (0..RECORDS).map(|n| key(&format!("many-at-once-{n}"))).collect();
    let mut versions = vec![0; RECORDS];
    for step in 0..3 {
        let writers: Vec<_> = records
            .iter()
            .zip(&versions)
            .map(|(record, &version)| {
                let (store, record) = (store.clone(), record.clone());
                tokio::spawn(async move {
                    let call_id = format!("{}-step-{step}", record.as_str());
                    let entry = entry_of("alice", "x", &call_id, &call_id, now_ms());
                    let stale = entry_of("mallory", "x", "stale", "stale", now_ms());
                    let (written, refused) = tokio::join!(
                        transition(&store, &record, version, &entry, None, HistoryRetention::last(2)),
                        // A version the record never holds here: a store whose versions come
                        // from one counter for every record (SQLite) could reach version + 7
                        // with the other records' writes, so a near one is not stale.
                        transition(&store, &record, version + STALE_AHEAD, &stale, None, HistoryRetention::last(2)),
                    );
                    assert!(matches!(refused, Err(StoreError::Conflict { .. })), "{refused:?}");
                    written.unwrap()
                })
            })
            .collect();
        for (version, writer) in versions.iter_mut().zip(writers) {
            *version = writer.await.unwrap();
        }
    }
    for (record, version) in records.iter().zip(&versions) {
        let loaded = store.load(record).await.unwrap();
        let last = format!("{}-step-2", record.as_str());
        assert_eq!((loaded.version, loaded.state_of("m", "?")), (*version, last.as_str()));
        let history = history_of(store, record).await.unwrap().unwrap();
        let kept = [format!("{}-step-1", record.as_str()), last];
        assert_eq!(call_ids(&history), kept.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// Retention by count keeps the newest entries; `last(0)` keeps none.
pub(super) async fn history_keeps_the_last_entries_retention_allows<S: FlowStore>(store: &S) {
    let record = key("history-count");
    let mut version = 0;
    for n in 1..=5 {
        let entry = entry_of("alice", "a", "b", &format!("count-{n}"), now_ms());
        version = transition(store, &record, version, &entry, None, HistoryRetention::last(3)).await.unwrap();
    }
    let history = history_of(store, &record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["count-3", "count-4", "count-5"], "the last 3 of 5");
    let entry = entry_of("alice", "b", "c", "count-6", now_ms());
    version = transition(store, &record, version, &entry, None, HistoryRetention::last(4)).await.unwrap();
    assert_eq!(
        call_ids(&history_of(store, &record).await.unwrap().unwrap()),
        ["count-3", "count-4", "count-5", "count-6"]
    );
    let entry = entry_of("alice", "c", "d", "count-7", now_ms());
    transition(store, &record, version, &entry, None, HistoryRetention::last(0)).await.unwrap();
    assert_eq!(history_of(store, &record).await.unwrap(), Some(Vec::new()), "last(0) keeps nothing");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "d", "the transition committed all the same");
}

/// Retention by age drops the entries older than the age at the new entry's time, and
/// with a count too, either bound drops an entry.
pub(super) async fn history_keeps_the_entries_young_enough<S: FlowStore>(store: &S) {
    let record = key("history-age");
    let now = now_ms();
    let hour = 3_600_000;
    let mut version = 0;
    for (n, at) in [(1, now - 3 * hour), (2, now - 2 * hour), (3, now - hour / 2)] {
        let entry = entry_of("alice", "a", "b", &format!("age-{n}"), at);
        version = transition(store, &record, version, &entry, None, Default::default()).await.unwrap();
    }
    let within = HistoryRetention::within(Duration::from_millis(hour));
    version =
        transition(store, &record, version, &entry_of("alice", "b", "c", "age-4", now), None, within).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &record).await.unwrap().unwrap()), ["age-3", "age-4"], "the last hour's");
    let both = HistoryRetention::within(Duration::from_millis(hour)).and_last(1);
    transition(store, &record, version, &entry_of("alice", "c", "d", "age-5", now + 1), None, both).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &record).await.unwrap().unwrap()), ["age-5"]);
}

/// Each record has its own history; removing a record forgets it, and so does a record's
/// expiry.
pub(super) async fn histories_are_independent_and_go_with_their_record<S: FlowStore>(store: &S) {
    let (a, b) = (key("history-a"), key("history-b"));
    transition(store, &a, 0, &entry_of("alice", "x", "y", "a-1", now_ms()), None, Default::default()).await.unwrap();
    transition(store, &b, 0, &entry_of("bob", "x", "z", "b-1", now_ms()), None, Default::default()).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &a).await.unwrap().unwrap()), ["a-1"]);
    assert_eq!(call_ids(&history_of(store, &b).await.unwrap().unwrap()), ["b-1"]);
    store.remove(&a).await.unwrap();
    assert_eq!(history_of(store, &a).await.unwrap(), Some(Vec::new()), "a removed record's history is gone");
    transition(store, &a, 0, &entry_of("carol", "x", "y", "a-2", now_ms()), None, Default::default()).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &a).await.unwrap().unwrap()), ["a-2"], "and stays gone when it returns");
    assert_eq!(call_ids(&history_of(store, &b).await.unwrap().unwrap()), ["b-1"]);

    let expiring = key("history-expiring");
    let next = Snapshot { expires_at_ms: Some(now_ms() + 50), ..Snapshot::default().with_state("m", "y") };
    let first = entry_of("alice", "x", "y", "expiring-1", now_ms());
    store.commit(&expiring, 0, &next, None, Some((&first, Default::default()))).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &expiring).await.unwrap().unwrap()), ["expiring-1"]);
    tokio::time::sleep(SHORT).await;
    assert_eq!(history_of(store, &expiring).await.unwrap(), Some(Vec::new()), "an expired record's history is gone");
    let again = entry_of("alice", "x", "y", "expiring-2", now_ms());
    store.commit(&expiring, 0, &Snapshot::default(), None, Some((&again, Default::default()))).await.unwrap();
    assert_eq!(call_ids(&history_of(store, &expiring).await.unwrap().unwrap()), ["expiring-2"]);
}

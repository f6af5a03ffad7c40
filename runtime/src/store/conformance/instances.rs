//! Instances: a context committed with its state, and deadlines the sweeper reads.

use super::fixtures::{entry_of, key, lease};
use crate::store::{FlowStore, Snapshot, StoreKey, now_ms};

/// An instance's context is committed with its state, in one compare-and-set (with its
/// history entry, under a lease or not): it reads back as written, a commit over a stale
/// version writes neither, and a commit that leaves it out forgets it.
pub(super) async fn an_instance_context_commits_with_its_state<S: FlowStore>(store: &S) {
    let record = key("context");
    let context =
        serde_json::json!({ "amount": { "currency": "EUR", "minor": 500_000 }, "captured": null, "note": "ü" });
    let first = Snapshot { context: Some(context.clone()), ..Snapshot::default().with_state("m", "created") };
    let v1 = store.commit(&record, 0, &first, None, None).await.unwrap();
    let read = store.load(&record).await.unwrap();
    assert_eq!((read.context.as_ref(), read.state_of("m", "?")), (Some(&context), "created"));

    let changed = serde_json::json!({ "amount": { "currency": "EUR", "minor": 500_000 }, "captured": 1 });
    let stale = Snapshot { context: Some(serde_json::json!({ "stale": true })), ..read.with_state("m", "voided") };
    assert!(store.commit(&record, v1 + 1_000, &stale, None, None).await.is_err());
    let lease = lease(store, &record).await.unwrap();
    let next = Snapshot { context: Some(changed.clone()), ..read.with_state("m", "captured") };
    let entry = entry_of("alice", "created", "captured", "context-1", now_ms());
    let v2 = store.commit(&record, v1, &next, Some(&lease), Some((&entry, Default::default()))).await.unwrap();
    drop(lease);
    let read = store.load(&record).await.unwrap();
    assert_eq!((read.context.as_ref(), read.state_of("m", "?"), read.version), (Some(&changed), "captured", v2));

    store.commit(&record, v2, &Snapshot { context: None, ..read.next() }, None, None).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().context, None, "a commit without a context keeps none");
}

/// [`FlowStore::due`]: instances whose deadline has passed, soonest first, none whose
/// deadline is ahead or gone (once the store is told, for one that indexes deadlines), and
/// none removed. A store that keeps no index names none at all.
pub(super) async fn due_instances_are_named_soonest_first<S: FlowStore>(store: &S) {
    let now = now_ms();
    let at = |id: &str| StoreKey::instance("conformance-due", id);
    let with_due =
        |due: Option<u64>| Snapshot { due_at_ms: due, ..Snapshot::default().with_state("conformance-due", "quoted") };
    for (id, due) in
        [("late", Some(now - 1_000)), ("later", Some(now - 500)), ("ahead", Some(now + 60_000)), ("none", None)]
    {
        store.commit(&at(id), 0, &with_due(due), None, None).await.unwrap();
    }
    let named = |keys: Vec<StoreKey>| -> Vec<String> {
        keys.into_iter()
            .filter_map(|k| {
                k.instance_parts().filter(|(_, m, _)| *m == "conformance-due").map(|(_, _, id)| id.to_string())
            })
            .collect()
    };
    let due = named(store.due(now, 10_000).await.unwrap());
    if due.is_empty() {
        return; // The store keeps no index of deadlines: reads apply what is due.
    }
    assert_eq!(due, ["late", "later"], "due instances, soonest first");
    // A commit indexes the deadline it writes, or that it has none, untold (the sweeper
    // tells the store nothing after a commit). Moved on: its deadline gone (a call took
    // it out of its timed state).
    let version = store.load(&at("late")).await.unwrap().version;
    store.commit(&at("late"), version, &with_due(None), None, None).await.unwrap();
    // Put off.
    let version = store.load(&at("later")).await.unwrap().version;
    store.commit(&at("later"), version, &with_due(Some(now + 30_000)), None, None).await.unwrap();
    assert_eq!(named(store.due(now, 10_000).await.unwrap()), Vec::<String>::new());
    assert_eq!(named(store.due(now + 120_000, 10_000).await.unwrap()), ["later", "ahead"]);
    store.remove(&at("later")).await.unwrap();
    assert_eq!(named(store.due(now + 120_000, 10_000).await.unwrap()), ["ahead"]);
    for id in ["late", "ahead", "none"] {
        store.remove(&at(id)).await.unwrap();
    }
}

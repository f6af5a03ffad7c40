//! Records: versions, compare-and-set, removal, expiry, payloads, challenges.

use std::time::Duration;

use super::fixtures::{SHORT, key, lease};
use crate::store::{FlowStore, Snapshot, StoreError, now_ms};

pub(super) async fn absent_records_load_as_version_zero<S: FlowStore>(store: &S) {
    let snapshot = store.load(&key("absent")).await.expect("load");
    assert_eq!(snapshot, Snapshot::default());
}

pub(super) async fn compare_and_set_applies_only_over_the_expected_version<S: FlowStore>(store: &S) {
    let record = key("cas");
    let first = Snapshot::default().with_state("invoice", "review");
    let v1 = store.commit(&record, 0, &first, None, None).await.expect("first commit");
    assert!(v1 > 0, "a committed record has a version above 0");
    let loaded = store.load(&record).await.unwrap();
    assert_eq!((loaded.version, &loaded.states), (v1, &first.states));

    let stale = Snapshot::default().with_state("invoice", "draft");
    assert_eq!(
        store.commit(&record, 0, &stale, None, None).await,
        Err(StoreError::Conflict { expected: 0, found: v1 })
    );
    assert_eq!(store.load(&record).await.unwrap().states, first.states, "a failed CAS must write nothing");

    let v2 = store.commit(&record, v1, &first.with_state("invoice", "approved"), None, None).await.expect("second");
    assert!(v2 > v1, "versions grow: {v1} then {v2}");
    assert_eq!(store.load(&record).await.unwrap().version, v2);
}

pub(super) async fn records_are_independent<S: FlowStore>(store: &S) {
    let (a, b) = (key("independent-a"), key("independent-b"));
    store.commit(&a, 0, &Snapshot::default().with_state("m", "x"), None, None).await.unwrap();
    assert_eq!(store.load(&b).await.unwrap(), Snapshot::default());
    // Holding one key's lease does not block another key's.
    let _held = lease(store, &a).await.unwrap();
    let _other = tokio::time::timeout(Duration::from_secs(5), lease(store, &b))
        .await
        .expect("a lease on another key must not wait")
        .unwrap();
}

pub(super) async fn removed_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("removed");
    store.commit(&record, 0, &Snapshot::default().with_state("m", "x"), None, None).await.unwrap();
    store.remove(&record).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default());
    store.remove(&record).await.expect("removing an absent record is not an error");
}

pub(super) async fn versions_never_go_back<S: FlowStore>(store: &S) {
    let record = key("versions");
    let v1 = store.commit(&record, 0, &Snapshot::default().with_state("m", "a"), None, None).await.unwrap();
    let v2 = store.commit(&record, v1, &Snapshot::default().with_state("m", "b"), None, None).await.unwrap();
    store.remove(&record).await.unwrap();
    let v3 = store.commit(&record, 0, &Snapshot::default().with_state("m", "c"), None, None).await.unwrap();
    assert!(v3 > v2, "a record written again after removal got version {v3}, not above {v2}");
    // A writer that read the record before the removal cannot commit over its successor.
    let stale = store.commit(&record, v2, &Snapshot::default().with_state("m", "stale"), None, None).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: v2, found: v3 }));
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "c");
}

pub(super) async fn expired_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("expiring");
    let expiring = Snapshot { expires_at_ms: Some(now_ms() + 50), ..Snapshot::default().with_state("m", "x") };
    let v1 = store.commit(&record, 0, &expiring, None, None).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().version, v1);
    tokio::time::sleep(SHORT).await;
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default(), "an expired record still loads");
    let v2 = store.commit(&record, 0, &Snapshot::default(), None, None).await.expect("an expired record is absent");
    assert!(v2 > v1);
}

/// Many tasks commit over the same version at once (two confirmations of one challenge,
/// two transitions that lost their leases): exactly one wins, the rest conflict, and the
/// record is the winner's.
pub(super) async fn concurrent_writers_from_one_version_have_one_winner<S: FlowStore + Clone>(store: &S) {
    let record = key("concurrent-writers");
    let base = store.commit(&record, 0, &Snapshot::default().with_state("m", "open"), None, None).await.unwrap();
    let writers: Vec<_> = (0..16)
        .map(|writer| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let next = Snapshot::default().with_state("m", &format!("writer-{writer}"));
                store.commit(&record, base, &next, None, None).await.map(|version| (writer, version))
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        match writer.await.unwrap() {
            Ok(won) => winners.push(won),
            Err(StoreError::Conflict { expected, .. }) => assert_eq!(expected, base),
            Err(other) => panic!("a writer failed: {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "one commit over version {base}, not {winners:?}");
    let (writer, version) = winners[0];
    let loaded = store.load(&record).await.unwrap();
    assert_eq!((loaded.version, loaded.state_of("m", "?")), (version, format!("writer-{writer}").as_str()));
}

/// What a challenge or an idempotency record keeps comes back as it was written.
pub(super) async fn records_keep_their_payload<S: FlowStore>(store: &S) {
    let record = key("payload");
    let payload =
        serde_json::json!({ "digest": "ab12", "attempts_left": 4, "spent": false, "nested": { "list": [1, "two"] } });
    let snapshot = Snapshot { record: Some(payload.clone()), ..Snapshot::default() };
    store.commit(&record, 0, &snapshot, None, None).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().record, Some(payload));
}

/// Many confirmations of one challenge at once, each reading it unspent and writing it
/// spent: exactly one succeeds, so a one-time code confirms one call.
pub(super) async fn a_challenge_is_spent_once<S: FlowStore + Clone>(store: &S) {
    let record = key("challenge");
    let unspent = Snapshot { record: Some(serde_json::json!({ "spent": false })), ..Snapshot::default() };
    store.commit(&record, 0, &unspent, None, None).await.unwrap();
    let confirmations: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let read = store.load(&record).await.unwrap();
                if read.record != Some(serde_json::json!({ "spent": false })) {
                    return false;
                }
                let spent = Snapshot { record: Some(serde_json::json!({ "spent": true })), ..read.next() };
                store.commit(&record, read.version, &spent, None, None).await.is_ok()
            })
        })
        .collect();
    let mut confirmed = 0;
    for confirmation in confirmations {
        confirmed += usize::from(confirmation.await.unwrap());
    }
    assert_eq!(confirmed, 1, "one challenge confirmed {confirmed} calls");
}

//! The behaviour every [`FlowStore`] must show; each backend's tests run [`check`].
//!
//! Enabled by the `conformance` feature, for backends kept outside this crate.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{FlowStore, Snapshot, StoreError, StoreKey, now_ms};

/// Runs the conformance suite against `store`, panicking on the first violation.
///
/// It uses keys whose ids start with `conformance-`; run it on a store without such keys.
pub async fn check<S: FlowStore + Clone>(store: &S) {
    absent_records_load_as_version_zero(store).await;
    compare_and_set_applies_only_over_the_expected_version(store).await;
    records_are_independent(store).await;
    leases_are_exclusive_per_key(store).await;
    removed_records_load_as_absent(store).await;
    removing_never_breaks_a_lease(store).await;
    versions_never_go_back(store).await;
    expired_records_load_as_absent(store).await;
    concurrent_writers_from_one_version_have_one_winner(store).await;
    records_keep_their_payload(store).await;
    a_challenge_is_spent_once(store).await;
    a_held_lease_commits_over_the_version_it_read(store).await;
    rate_limit_windows_admit_n_per_period(store).await;
    concurrent_spenders_share_one_window(store).await;
}

fn key(name: &str) -> StoreKey {
    StoreKey::connection(&format!("conformance-{name}"))
}

const SHORT: Duration = Duration::from_millis(100);

async fn absent_records_load_as_version_zero<S: FlowStore>(store: &S) {
    let snapshot = store.load(&key("absent")).await.expect("load");
    assert_eq!(snapshot, Snapshot::default());
}

async fn compare_and_set_applies_only_over_the_expected_version<S: FlowStore>(store: &S) {
    let record = key("cas");
    let first = Snapshot::default().with_state("invoice", "review");
    let v1 = store.compare_and_set(&record, 0, &first).await.expect("first commit");
    assert!(v1 > 0, "a committed record has a version above 0");
    let loaded = store.load(&record).await.unwrap();
    assert_eq!((loaded.version, &loaded.states), (v1, &first.states));

    let stale = Snapshot::default().with_state("invoice", "draft");
    assert_eq!(store.compare_and_set(&record, 0, &stale).await, Err(StoreError::Conflict { expected: 0, found: v1 }));
    assert_eq!(store.load(&record).await.unwrap().states, first.states, "a failed CAS must write nothing");

    let v2 = store.compare_and_set(&record, v1, &first.with_state("invoice", "approved")).await.expect("second");
    assert!(v2 > v1, "versions grow: {v1} then {v2}");
    assert_eq!(store.load(&record).await.unwrap().version, v2);
}

async fn records_are_independent<S: FlowStore>(store: &S) {
    let (a, b) = (key("independent-a"), key("independent-b"));
    store.compare_and_set(&a, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    assert_eq!(store.load(&b).await.unwrap(), Snapshot::default());
    // Holding one key's lease does not block another key's.
    let _held = store.lease(&a).await.unwrap();
    let _other = tokio::time::timeout(Duration::from_secs(5), store.lease(&b))
        .await
        .expect("a lease on another key must not wait")
        .unwrap();
}

async fn leases_are_exclusive_per_key<S: FlowStore + Clone>(store: &S) {
    let record = key("lease");
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record, inside, max_inside) =
                (store.clone(), record.clone(), inside.clone(), max_inside.clone());
            tokio::spawn(async move {
                let _lease = store.lease(&record).await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(max_inside.load(Ordering::SeqCst), 1, "two holders of one key's lease at once");
}

async fn removed_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("removed");
    store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    store.remove(&record).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default());
    store.remove(&record).await.expect("removing an absent record is not an error");
}

async fn removing_never_breaks_a_lease<S: FlowStore + Clone>(store: &S) {
    let record = key("remove-while-leased");
    store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    let held = store.lease(&record).await.unwrap();
    // Someone is already waiting when the record is removed...
    let waiter = {
        let (store, record) = (store.clone(), record.clone());
        tokio::spawn(async move { store.lease(&record).await.map(drop) })
    };
    tokio::time::sleep(SHORT).await;
    store.remove(&record).await.unwrap();
    // ...and neither that waiter nor a newcomer gets the lease while it is held.
    assert!(tokio::time::timeout(SHORT, store.lease(&record)).await.is_err(), "a newcomer took a held lease");
    assert!(!waiter.is_finished(), "a waiter took a held lease after the record was removed");
    drop(held);
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the waiter gets the lease").unwrap().unwrap();
}

async fn versions_never_go_back<S: FlowStore>(store: &S) {
    let record = key("versions");
    let v1 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "a")).await.unwrap();
    let v2 = store.compare_and_set(&record, v1, &Snapshot::default().with_state("m", "b")).await.unwrap();
    store.remove(&record).await.unwrap();
    let v3 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "c")).await.unwrap();
    assert!(v3 > v2, "a record written again after removal got version {v3}, not above {v2}");
    // A writer that read the record before the removal cannot commit over its successor.
    let stale = store.compare_and_set(&record, v2, &Snapshot::default().with_state("m", "stale")).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: v2, found: v3 }));
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "c");
}

async fn expired_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("expiring");
    let expiring = Snapshot { expires_at_ms: Some(now_ms() + 50), ..Snapshot::default().with_state("m", "x") };
    let v1 = store.compare_and_set(&record, 0, &expiring).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().version, v1);
    tokio::time::sleep(SHORT).await;
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default(), "an expired record still loads");
    let v2 = store.compare_and_set(&record, 0, &Snapshot::default()).await.expect("an expired record is absent");
    assert!(v2 > v1);
}

/// Many tasks commit over the same version at once (two confirmations of one challenge,
/// two transitions that lost their leases): exactly one wins, the rest conflict, and the
/// record is the winner's.
async fn concurrent_writers_from_one_version_have_one_winner<S: FlowStore + Clone>(store: &S) {
    let record = key("concurrent-writers");
    let base = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "open")).await.unwrap();
    let writers: Vec<_> = (0..16)
        .map(|writer| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let next = Snapshot::default().with_state("m", &format!("writer-{writer}"));
                store.compare_and_set(&record, base, &next).await.map(|version| (writer, version))
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
async fn records_keep_their_payload<S: FlowStore>(store: &S) {
    let record = key("payload");
    let payload =
        serde_json::json!({ "digest": "ab12", "attempts_left": 4, "spent": false, "nested": { "list": [1, "two"] } });
    let snapshot = Snapshot { record: Some(payload.clone()), ..Snapshot::default() };
    store.compare_and_set(&record, 0, &snapshot).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().record, Some(payload));
}

/// Many confirmations of one challenge at once, each reading it unspent and writing it
/// spent: exactly one succeeds, so a one-time code confirms one call.
async fn a_challenge_is_spent_once<S: FlowStore + Clone>(store: &S) {
    let record = key("challenge");
    let unspent = Snapshot { record: Some(serde_json::json!({ "spent": false })), ..Snapshot::default() };
    store.compare_and_set(&record, 0, &unspent).await.unwrap();
    let confirmations: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let read = store.load(&record).await.unwrap();
                if read.record != Some(serde_json::json!({ "spent": false })) {
                    return false;
                }
                let spent = Snapshot { record: Some(serde_json::json!({ "spent": true })), ..read.next() };
                store.compare_and_set(&record, read.version, &spent).await.is_ok()
            })
        })
        .collect();
    let mut confirmed = 0;
    for confirmation in confirmations {
        confirmed += usize::from(confirmation.await.unwrap());
    }
    assert_eq!(confirmed, 1, "one challenge confirmed {confirmed} calls");
}

/// A lease's holder commits through [`FlowStore::commit_leased`], over the version it read
/// and no other.
async fn a_held_lease_commits_over_the_version_it_read<S: FlowStore>(store: &S) {
    let record = key("leased-commit");
    let lease = store.lease(&record).await.unwrap();
    let v1 = store.commit_leased(&record, 0, &Snapshot::default().with_state("m", "a"), &lease).await.unwrap();
    let stale = store.commit_leased(&record, 0, &Snapshot::default().with_state("m", "b"), &lease).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: 0, found: v1 }));
    drop(lease);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "a");
}

/// A store that keeps rate-limit windows ([`FlowStore::spend_window`] answers `Some`)
/// admits at most N calls in every period, says when the next is admitted, gives a
/// refunded call's place back, and keeps windows apart. A store that keeps none is
/// skipped: each process then counts its own calls.
async fn rate_limit_windows_admit_n_per_period<S: FlowStore>(store: &S) {
    let (window, other) = ("conformance-window", "conformance-window-other");
    let per_ms = 400;
    let Some(first) = store.spend_window(window, 3, per_ms).await.unwrap() else { return };
    let first = first.expect("the first call of a window is admitted");
    for _ in 0..2 {
        store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("within the limit");
    }
    let wait = store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect_err("the fourth of 3 per period");
    assert!((1..=per_ms).contains(&wait), "retry after {wait} ms for a {per_ms} ms window");
    store.spend_window(other, 3, per_ms).await.unwrap().unwrap().expect("another window has its own allowance");
    store.refund_window(window, &first).await.unwrap();
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("a refunded call frees its place");
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect_err("and only one place");
    tokio::time::sleep(Duration::from_millis(per_ms + 50)).await;
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("the calls left the window");
}

/// Spenders from many tasks at once on one window: exactly N are admitted.
async fn concurrent_spenders_share_one_window<S: FlowStore + Clone>(store: &S) {
    let window = "conformance-window-concurrent";
    if store.spend_window("conformance-window-probe", 1, 1).await.unwrap().is_none() {
        return;
    }
    let spenders: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.spend_window(window, 5, 60_000).await.unwrap().unwrap().is_ok() })
        })
        .collect();
    let mut admitted = 0;
    for spender in spenders {
        admitted += usize::from(spender.await.unwrap());
    }
    assert_eq!(admitted, 5, "5 calls a minute admitted {admitted}");
}

//! Leases: exclusive per key, never broken by a removal, fenced when taken over.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::fixtures::{SHORT, key, lease, take_over, try_lease};
use crate::store::{FlowStore, Snapshot, StoreError};
use crate::store::{Hold, Step};

pub(super) async fn leases_are_exclusive_per_key<S: FlowStore + Clone>(store: &S) {
    let record = key("lease");
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record, inside, max_inside) =
                (store.clone(), record.clone(), inside.clone(), max_inside.clone());
            tokio::spawn(async move {
                let _lease = lease(&store, &record).await.unwrap();
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

pub(super) async fn removing_never_breaks_a_lease<S: FlowStore + Clone>(store: &S) {
    let record = key("remove-while-leased");
    store.commit(&record, 0, &Snapshot::default().with_state("m", "x"), None, None).await.unwrap();
    let held = lease(store, &record).await.unwrap();
    // Someone is already waiting when the record is removed...
    let waiter = {
        let (store, record) = (store.clone(), record.clone());
        tokio::spawn(async move { lease(&store, &record).await.map(drop) })
    };
    tokio::time::sleep(SHORT).await;
    store.remove(&record).await.unwrap();
    // ...and neither that waiter nor a newcomer gets the lease while it is held.
    assert!(tokio::time::timeout(SHORT, lease(store, &record)).await.is_err(), "a newcomer took a held lease");
    assert!(!waiter.is_finished(), "a waiter took a held lease after the record was removed");
    drop(held);
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the waiter gets the lease").unwrap().unwrap();
}

/// A lease's holder commits through [`FlowStore::commit`] with the step's lease, over the version it read
/// and no other.
pub(super) async fn a_held_lease_commits_over_the_version_it_read<S: FlowStore>(store: &S) {
    let record = key("leased-commit");
    let lease = lease(store, &record).await.unwrap();
    let v1 = store.commit(&record, 0, &Snapshot::default().with_state("m", "a"), Some(&lease), None).await.unwrap();
    let stale = store.commit(&record, 0, &Snapshot::default().with_state("m", "b"), Some(&lease), None).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: 0, found: v1 }));
    drop(lease);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "a");
}

/// [`Hold::Wait`]: each of many holders in turn reads what the one before it
/// committed under the lease (a counter incremented 16 times by 16 holders ends at 16, and
/// no commit finds another version than the one its holder read).
pub(super) async fn a_lease_taken_with_its_record_sees_every_commit_before_it<S: FlowStore + Clone>(store: &S) {
    let record = key("lease-and-load");
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let (lease, read) = store.begin(&record, Hold::Wait).await.and_then(Step::leased).unwrap();
                let count = read.record.as_ref().and_then(|r| r["n"].as_u64()).unwrap_or(0);
                let next = Snapshot { record: Some(serde_json::json!({ "n": count + 1 })), ..read.next() };
                store
                    .commit(&record, read.version, &next, Some(&lease), None)
                    .await
                    .expect("the version its holder read");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let counted = store.load(&record).await.unwrap().record.and_then(|r| r["n"].as_u64());
    assert_eq!(counted, Some(16), "a holder read a record older than the last commit");
}

/// [`Hold::IfFree`]: a held lease is not taken, and not waited for (the
/// record as committed comes back at once); one taken is exclusive, with a read that sees
/// every commit before it (16 callers in turn, each trying first and else waiting, count to
/// 16). A store that never takes one early passes with every caller waiting.
pub(super) async fn a_lease_tried_is_taken_only_when_free<S: FlowStore + Clone>(store: &S) {
    let record = key("try-lease");
    let v1 = store.commit(&record, 0, &Snapshot::default().with_state("m", "a"), None, None).await.unwrap();
    let held = lease(store, &record).await.unwrap();
    let tried = tokio::time::timeout(Duration::from_secs(5), try_lease(store, &record))
        .await
        .expect("a held lease is tried, not waited for");
    let (read, lease) = tried.unwrap();
    assert!(lease.is_none(), "a held lease was taken again");
    assert_eq!(read.version, v1, "the record as committed");
    drop(held);
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let (lease, read) = match try_lease(&store, &record).await.unwrap() {
                    (read, Some(lease)) => (lease, read),
                    (_, None) => store.begin(&record, Hold::Wait).await.and_then(Step::leased).unwrap(),
                };
                let count = read.record.as_ref().and_then(|r| r["n"].as_u64()).unwrap_or(0);
                let next = Snapshot { record: Some(serde_json::json!({ "n": count + 1 })), ..read.next() };
                store
                    .commit(&record, read.version, &next, Some(&lease), None)
                    .await
                    .expect("the version its holder read");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let counted = store.load(&record).await.unwrap().record.and_then(|r| r["n"].as_u64());
    assert_eq!(counted, Some(16), "a lease tried was not exclusive, or its read was stale");
}

/// [`Hold::TakeOver`] on a shared store: a held lease is taken at once, and
/// its holder's commits are refused from then on ([`StoreError::LeaseLost`]), the new
/// holder's accepted. (A store whose leases live in this process waits, as for a lease:
/// nothing to check here.)
pub(super) async fn a_lease_taken_over_fences_its_holder<S: FlowStore>(store: &S) {
    if store.capabilities().replicas.is_none() {
        return;
    }
    let record = key("take-over");
    let v1 = store.commit(&record, 0, &Snapshot::default().with_state("m", "a"), None, None).await.unwrap();
    let paused = lease(store, &record).await.unwrap();
    let taken = tokio::time::timeout(Duration::from_secs(5), take_over(store, &record))
        .await
        .expect("a held lease is taken over at once")
        .unwrap();
    let resumed = store.commit(&record, v1, &Snapshot::default().with_state("m", "b"), Some(&paused), None).await;
    assert_eq!(resumed, Err(StoreError::LeaseLost), "the holder whose lease was taken over committed");
    store.commit(&record, v1, &Snapshot::default().with_state("m", "c"), Some(&taken), None).await.unwrap();
    drop(paused);
    drop(taken);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "c");
}

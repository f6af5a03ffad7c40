//! The behaviour every [`FlowStore`] must show; each backend's tests run [`check`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{FlowStore, StoreError};
use crate::flow::{FlowKey, Snapshot};

/// Runs the conformance suite against `store`, panicking on the first violation.
///
/// It uses flow keys prefixed `conformance:`; run it on a store with no such flows.
pub async fn check<S: FlowStore + Clone>(store: &S) {
    absent_flows_load_as_version_zero(store).await;
    compare_and_set_applies_only_over_the_expected_version(store).await;
    flows_are_independent(store).await;
    leases_are_exclusive_per_flow(store).await;
    removed_flows_load_as_new(store).await;
}

fn key(name: &str) -> FlowKey {
    FlowKey::session(&format!("conformance:{name}"))
}

async fn absent_flows_load_as_version_zero<S: FlowStore>(store: &S) {
    let snapshot = store.load(&key("absent")).await.expect("load");
    assert_eq!(snapshot, Snapshot::default());
}

async fn compare_and_set_applies_only_over_the_expected_version<S: FlowStore>(store: &S) {
    let flow = key("cas");
    let first = Snapshot::default().with_state("invoice", "review");
    store.compare_and_set(&flow, 0, &first).await.expect("first commit");
    assert_eq!(store.load(&flow).await.unwrap(), first);

    let stale = Snapshot::default().with_state("invoice", "draft");
    assert_eq!(store.compare_and_set(&flow, 0, &stale).await, Err(StoreError::Conflict { expected: 0, found: 1 }));
    assert_eq!(store.load(&flow).await.unwrap(), first, "a failed CAS must write nothing");

    let second = first.with_state("invoice", "approved");
    store.compare_and_set(&flow, 1, &second).await.expect("second commit");
    assert_eq!(store.load(&flow).await.unwrap().version, 2);
}

async fn flows_are_independent<S: FlowStore>(store: &S) {
    let (a, b) = (key("independent-a"), key("independent-b"));
    store.compare_and_set(&a, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    assert_eq!(store.load(&b).await.unwrap(), Snapshot::default());
    // Holding one flow's lease does not block another flow's.
    let _held = store.lease(&a).await.unwrap();
    let _other = tokio::time::timeout(Duration::from_secs(5), store.lease(&b))
        .await
        .expect("a lease on another flow must not wait")
        .unwrap();
}

async fn leases_are_exclusive_per_flow<S: FlowStore + Clone>(store: &S) {
    let flow = key("lease");
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, flow, inside, max_inside) = (store.clone(), flow.clone(), inside.clone(), max_inside.clone());
            tokio::spawn(async move {
                let _lease = store.lease(&flow).await.unwrap();
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
    assert_eq!(max_inside.load(Ordering::SeqCst), 1, "two holders of one flow's lease at once");
}

async fn removed_flows_load_as_new<S: FlowStore>(store: &S) {
    let flow = key("removed");
    store.compare_and_set(&flow, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    store.remove(&flow).await.unwrap();
    assert_eq!(store.load(&flow).await.unwrap(), Snapshot::default());
    store.remove(&flow).await.expect("removing an absent flow is not an error");
}

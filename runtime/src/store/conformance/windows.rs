//! Rate-limit windows counted in the store.

use std::time::Duration;

use super::fixtures::{refund, spend};
use crate::store::FlowStore;

/// A store that keeps rate-limit windows ([`Capabilities::windows`](crate::store::Capabilities::windows))
/// admits at most N calls in every period, says when the next is admitted, gives a
/// refunded call's place back, and keeps windows apart. A store that keeps none is
/// skipped: each process then counts its own calls.
pub(super) async fn rate_limit_windows_admit_n_per_period<S: FlowStore>(store: &S) {
    let (window, other) = ("conformance-window", "conformance-window-other");
    let per_ms = 400;
    let Some(first) = spend(store, window, 3, per_ms).await.unwrap() else { return };
    let first = first.expect("the first call of a window is admitted");
    for _ in 0..2 {
        spend(store, window, 3, per_ms).await.unwrap().unwrap().expect("within the limit");
    }
    let wait = spend(store, window, 3, per_ms).await.unwrap().unwrap().expect_err("the fourth of 3 per period");
    assert!((1..=per_ms).contains(&wait), "retry after {wait} ms for a {per_ms} ms window");
    spend(store, other, 3, per_ms).await.unwrap().unwrap().expect("another window has its own allowance");
    refund(store, window, &first).await.unwrap();
    spend(store, window, 3, per_ms).await.unwrap().unwrap().expect("a refunded call frees its place");
    spend(store, window, 3, per_ms).await.unwrap().unwrap().expect_err("and only one place");
    tokio::time::sleep(Duration::from_millis(per_ms + 50)).await;
    spend(store, window, 3, per_ms).await.unwrap().unwrap().expect("the calls left the window");
}

/// Spenders from many tasks at once on one window: exactly N are admitted.
pub(super) async fn concurrent_spenders_share_one_window<S: FlowStore + Clone>(store: &S) {
    let window = "conformance-window-concurrent";
    if spend(store, "conformance-window-probe", 1, 1).await.unwrap().is_none() {
        return;
    }
    let spenders: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { spend(&store, window, 5, 60_000).await.unwrap().unwrap().is_ok() })
        })
        .collect();
    let mut admitted = 0;
    for spender in spenders {
        admitted += usize::from(spender.await.unwrap());
    }
    assert_eq!(admitted, 5, "5 calls a minute admitted {admitted}");
}

//! Memory per idle instance: the resident size the memory store grows by when it holds
//! `INSTANCES` (default 100,000) instances an `invoice_submit` left behind — each in
//! `review`, committed once, with its history entry — read from `/proc/self/statm`
//! (Linux).
//!
//! ```sh
//! cargo bench -p toolgate --bench instances               # INSTANCES=100000
//! HISTORY=0 cargo bench -p toolgate --bench instances     # the instances alone
//! ```

use toolgate::store::{FlowStore, HistoryEntry, HistoryRetention, MemoryStore, Snapshot, StoreKey};

/// This process's resident set, in bytes.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm (Linux)");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("resident pages");
    pages * 4096
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let instances: u64 = std::env::var("INSTANCES").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    // `HISTORY=0`: the instance alone, without its history entry.
    let with_history = std::env::var("HISTORY").map_or(true, |h| h != "0");
    let store = MemoryStore::new();
    let retention = HistoryRetention::default();
    let before = resident();
    for n in 1..=instances {
        let key = StoreKey::instance("invoice", &format!("INV-{n}"));
        let next = Snapshot::default().with_state("invoice", "review");
        let entry: HistoryEntry = serde_json::from_value(serde_json::json!({
            "principal": "clerk", "tenant": null, "from": "draft", "to": "review", "event": "SUBMIT",
            "tool": "invoice_submit", "time": "2026-12-02T03:30:00.000Z",
            "call_id": format!("{n:032x}"), "at_ms": 1_796_182_200_000u64,
        }))
        .expect("a history entry");
        if with_history {
            store.commit(&key, 0, &next, None, Some((&entry, retention))).await.expect("commit");
        } else {
            store.commit(&key, 0, &next, None, None).await.expect("commit");
        }
    }
    let grown = resident().saturating_sub(before);
    println!(
        "memory store: {instances} instances in `review`{}: {} KiB resident, {} bytes each",
        if with_history { " with one history entry each" } else { "" },
        grown / 1024,
        grown / instances
    );
}

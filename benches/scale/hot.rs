//! Item 5: one invoice with a long history. `HOT` transitions (`invoice_submit` and
//! `invoice_reject` in turn on `INV-1`, one connection): the history the store keeps of it
//! stays bounded as documented (the last 100 entries, `HistoryRetention::default`), and a
//! transition costs the same at the end as at the start.

use std::time::Instant;

use toolgate::store::{HistoryRetention, StoreKey};

use crate::Config;
use crate::driver::{Caller, Latencies};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// Transitions per window whose median latency is reported.
const WINDOW: u64 = 1_000;

/// Runs item 5 on `kind`.
pub(crate) async fn run(kind: Kind, config: &Config) {
    let target = Target::fresh(kind, 0, &config.dir).await;
    let server = Server::start("invoice", &target.url, &config.server_args()).await;
    let mut caller = Caller::new(&server.url);
    let arguments = r#"{"id":"INV-1","domain":"invoice"}"#;
    let mut windows: Vec<f64> = Vec::new();
    let mut window = Latencies::default();
    let started = Instant::now();
    for n in 0..config.hot {
        let tool = if n.is_multiple_of(2) { "invoice_submit" } else { "invoice_reject" };
        match caller.call(tool, arguments).await {
            Ok(took) => window.push(took),
            Err(error) => panic!("transition {n} refused: {error}"),
        }
        if window.len() as u64 == WINDOW.min(config.hot) {
            windows.push(window.quantile_ms(0.5));
            window = Latencies::default();
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    server.stop().await;
    let store = target.open().await;
    let history = store.capabilities().history.expect("the store keeps histories");
    let kept = history.history(&StoreKey::instance("invoice", "INV-1")).await.expect("the history").len();
    let bound = HistoryRetention::default().entries().unwrap_or(u32::MAX) as usize;
    drop(store);
    let size = target.size_bytes().await;
    let (first, last) = (windows[0], windows[windows.len() - 1]);
    let (low, high) = windows.iter().fold((f64::MAX, 0f64), |(l, h), w| (l.min(*w), h.max(*w)));
    println!(
        "\n| store | transitions on one invoice | per s | p50 of the first {WINDOW} (ms) | of the last {WINDOW} | lowest / highest window | history kept (bound) | store size |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {:.0} | {first:.3} | {last:.3} | {low:.3} / {high:.3} | {kept} ({bound}) | {:.1} MB |",
        kind.name(),
        config.hot,
        config.hot as f64 / elapsed,
        size as f64 / 1e6
    );
    assert!(kept <= bound, "the history is bounded: {kept} entries kept, {bound} documented");
    target.drop_store().await;
}

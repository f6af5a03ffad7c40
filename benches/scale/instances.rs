//! Item 1: keyed transitions, views and counts on a store holding many invoices.
//!
//! Each size gets a fresh store, seeded through the server itself (`invoice_submit` of
//! `INV-1` … `INV-<size>`, 32 connections: every invoice in `review` with one history
//! entry). Then, in alternated rounds (10⁵, 10⁶, 10⁵, …, each round a server started
//! afresh on the store), calls go to uniformly random existing invoices: each connection
//! owns the ids ≡ its number mod 32 and knows their states, so every call is a transition
//! that must succeed (`invoice_reject` on one in review, `invoice_submit` on one in draft).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use toolgate::store::FlowStore;

use crate::Config;
use crate::driver::{Caller, Latencies, Rng};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// The invoices of one store, and which are in draft (the rest are in review).
struct Seeded {
    size: u64,
    target: Target,
    draft: Arc<Vec<AtomicBool>>,
    seed_rate: f64,
    seeded_bytes: u64,
}

/// One round's figures at one size.
#[derive(Debug, Default, Clone)]
struct Round {
    transitions_per_s: f64,
    many_p99_ms: f64,
    many_max_ms: f64,
    one_p50_ms: f64,
    one_p99_ms: f64,
    view_p50_ms: f64,
    view_p99_ms: f64,
    resident_mb: f64,
}

fn args(id: u64) -> String {
    format!(r#"{{"id":"INV-{id}","domain":"invoice"}}"#)
}

/// The transition that `id`'s state allows, made; false if it was refused.
async fn transition(caller: &mut Caller, draft: &[AtomicBool], id: u64, latencies: &mut Latencies) -> bool {
    let in_draft = draft[id as usize].load(Ordering::Relaxed);
    let tool = if in_draft { "invoice_submit" } else { "invoice_reject" };
    match caller.call(tool, &args(id)).await {
        Ok(took) => {
            draft[id as usize].store(!in_draft, Ordering::Relaxed);
            latencies.push(took);
            true
        }
        Err(error) => {
            eprintln!("bad call: {error}");
            false
        }
    }
}

async fn seed(kind: Kind, slot: usize, size: u64, config: &Config) -> Seeded {
    let target = Target::fresh(kind, slot, &config.dir).await;
    let before = target.size_bytes().await;
    let server = Server::start("invoice", &target.url, &config.server_args()).await;
    let next = Arc::new(AtomicU64::new(1));
    let started = Instant::now();
    let workers: Vec<_> = (0..config.connections)
        .map(|_| {
            let (next, url) = (next.clone(), server.url.clone());
            tokio::spawn(async move {
                let mut caller = Caller::new(&url);
                loop {
                    let id = next.fetch_add(1, Ordering::Relaxed);
                    if id > size {
                        break;
                    }
                    if let Err(error) = caller.call("invoice_submit", &args(id)).await {
                        panic!("seeding failed: {error}");
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("a seeding worker");
    }
    let seed_rate = size as f64 / started.elapsed().as_secs_f64();
    server.stop().await;
    let seeded_bytes = target.size_bytes().await.saturating_sub(before);
    let draft = Arc::new((0..=size).map(|_| AtomicBool::new(false)).collect());
    println!(
        "{} {size}: seeded at {seed_rate:.0} submits/s; store grew {:.1} MB ({} bytes an invoice with its history)",
        kind.name(),
        seeded_bytes as f64 / 1e6,
        seeded_bytes / size.max(1)
    );
    Seeded { size, target, draft, seed_rate, seeded_bytes }
}

async fn round(seeded: &Seeded, config: &Config, number: usize) -> Round {
    let server = Server::start("invoice", &seeded.target.url, &config.server_args()).await;
    let size = seeded.size;
    // Many connections: transitions per second.
    let stop = Arc::new(AtomicBool::new(false));
    let connections = config.connections as u64;
    let workers: Vec<_> = (0..connections)
        .map(|k| {
            let (stop, url, draft) = (stop.clone(), server.url.clone(), seeded.draft.clone());
            let seed = (number as u64) << 32 | k;
            tokio::spawn(async move {
                let mut caller = Caller::new(&url);
                let mut rng = Rng::new(seed);
                let mut latencies = Latencies::default();
                let owned = (size + connections - 1 - k) / connections;
                let mut bad = 0;
                while !stop.load(Ordering::Relaxed) && owned > 0 {
                    // The ids this connection owns: k+1, k+1+connections, …
                    let id = k + 1 + rng.below(owned) * connections;
                    if id > size {
                        continue;
                    }
                    if !transition(&mut caller, &draft, id, &mut latencies).await {
                        bad += 1;
                    }
                }
                (latencies, bad)
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(config.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut many = Latencies::default();
    let mut bad = 0;
    for worker in workers {
        let (latencies, worker_bad) = worker.await.expect("a worker");
        many.extend(latencies);
        bad += worker_bad;
    }
    let elapsed = started.elapsed().as_secs_f64();
    // One connection: a conversation's latency, transitions then views.
    let mut caller = Caller::new(&server.url);
    let mut rng = Rng::new(u64::MAX - number as u64);
    let mut one = Latencies::default();
    for _ in 0..config.calls {
        let id = 1 + rng.below(size);
        if !transition(&mut caller, &seeded.draft, id, &mut one).await {
            bad += 1;
        }
    }
    let mut view = Latencies::default();
    for _ in 0..config.calls {
        let id = 1 + rng.below(size);
        match caller.call("invoice_view", &args(id)).await {
            Ok(took) => view.push(took),
            Err(error) => {
                eprintln!("bad view: {error}");
                bad += 1;
            }
        }
    }
    let resident = server.resident_bytes();
    server.stop().await;
    assert_eq!(bad, 0, "every call of the round succeeds");
    Round {
        transitions_per_s: many.len() as f64 / elapsed,
        many_p99_ms: many.quantile_ms(0.99),
        many_max_ms: many.max_ms(),
        one_p50_ms: one.quantile_ms(0.5),
        one_p99_ms: one.quantile_ms(0.99),
        view_p50_ms: view.quantile_ms(0.5),
        view_p99_ms: view.quantile_ms(0.99),
        resident_mb: resident as f64 / 1e6,
    }
}

/// The median of three or more figures (the middle one).
fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

/// The console's counts of the invoices, timed (median of 101 reads), and checked.
async fn counts(store: &Arc<dyn FlowStore>, size: u64) -> f64 {
    let counter = store.capabilities().counts.expect("the store counts");
    let counts = counter.instances("", "invoice").await.expect("counts");
    let counted: u64 = counts.states.values().sum();
    assert_eq!(counted, size, "every invoice counted: {counts:?}");
    let mut times = Vec::new();
    for _ in 0..101 {
        let started = Instant::now();
        counter.instances("", "invoice").await.expect("counts");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    median(times)
}

/// Runs item 1 on `kind`.
pub(crate) async fn run(kind: Kind, config: &Config) {
    let mut seeded = Vec::new();
    for (slot, size) in config.sizes.iter().enumerate() {
        seeded.push(seed(kind, slot, *size, config).await);
    }
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); seeded.len()];
    for number in 0..config.rounds {
        for (at, one) in seeded.iter().enumerate() {
            let figures = round(one, config, number).await;
            println!("{} {} round {}: {figures:?}", kind.name(), one.size, number + 1);
            rounds[at].push(figures);
        }
    }
    println!(
        "\n| store | instances | seeded (submits/s) | transitions/s, {} conns | p99 / max there (ms) | 1 conn p50 / p99 (ms) | view p50 / p99 (ms) | counts (ms) | store size | bytes an invoice | server RSS (MB) |",
        config.connections
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (one, figures) in seeded.into_iter().zip(rounds) {
        let m = |f: fn(&Round) -> f64| median(figures.iter().map(f).collect());
        let store = one.target.open().await;
        let counts_ms = counts(&store, one.size).await;
        drop(store);
        let size = one.target.size_bytes().await;
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.1} / {:.0} | {:.2} / {:.2} | {:.2} / {:.2} | {:.3} | {:.1} MB | {} | {:.0} |",
            kind.name(),
            one.size,
            one.seed_rate,
            m(|r| r.transitions_per_s),
            m(|r| r.many_p99_ms),
            m(|r| r.many_max_ms),
            m(|r| r.one_p50_ms),
            m(|r| r.one_p99_ms),
            m(|r| r.view_p50_ms),
            m(|r| r.view_p99_ms),
            counts_ms,
            size as f64 / 1e6,
            one.seeded_bytes / one.size.max(1),
            m(|r| r.resident_mb),
        );
        one.target.drop_store().await;
    }
}

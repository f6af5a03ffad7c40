//! Item 3: an effect backlog. The payments example's processor and notification service
//! are down (its `PAYMENTS_TEST_OUTAGE_FILE` hook) while `BACKLOG` payments are created,
//! authorized and settled, each settlement recording one `notify_settled` effect; then the
//! service comes back. The servers run with `--effect-attempts 40` (a real outage outlasts
//! the default 5 attempts' 15 s), and each attempt takes `BACKLOG_LATENCY_MS`, as a real
//! service's round trip does.
//!
//! It measures the servers' memory and the store's size while the effects wait, how long
//! they take to drain once the service is back and at what rate, and, from the hook's log
//! of every attempt: how many attempts the outage cost, how the retries spread over time
//! (the busiest second against the average one), and the most attempts under way at once
//! in one server. It checks that every effect was delivered exactly once per key (the
//! notices log), and that none is left pending or dead (a sample of records).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use toolgate::store::StoreKey;

use crate::Config;
use crate::driver::Rng;
use crate::payments::{Notices, TENANTS, create, each, payments_args, start_with};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// The shortest outage, however fast the effects were recorded.
const LEAST_OUTAGE: Duration = Duration::from_secs(3);

/// One attempt, as the example's hook logged it.
#[derive(Debug, serde::Deserialize)]
struct Attempt {
    at_ms: u64,
    attempt: u32,
    up: bool,
    under_way: usize,
}

fn attempts(outage: &Path) -> Vec<Attempt> {
    let log = format!("{}.attempts.jsonl", outage.display());
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Runs item 3 on `kind` with `replicas` servers.
pub(crate) async fn run(kind: Kind, replicas: usize, config: &Config) {
    let count = config.backlog;
    let dir = config.dir.join(format!("backlog-{}-{replicas}", kind.name()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let target = Target::fresh(kind, 0, &config.dir).await;
    let outage = dir.join("outage");
    std::fs::write(&outage, "down").expect("the outage file");
    let mut args = payments_args(config, &dir, 86_400);
    args.extend(["--settle-seconds", "0", "--effect-attempts", "40"].map(String::from));
    let env = [
        ("PAYMENTS_TEST_OUTAGE_FILE", outage.display().to_string()),
        ("PAYMENTS_TEST_PROCESSOR_MS", config.backlog_latency_ms.to_string()),
        // Every failed attempt is a warning: hundreds of thousands of them
        // (`BACKLOG_LOG=warn` to see them anyway).
        ("RUST_LOG", std::env::var("BACKLOG_LOG").unwrap_or_else(|_| "error".into())),
    ];
    let mut servers = Vec::new();
    for _ in 0..replicas {
        servers.push(start_with(&target, &args, &env).await);
    }
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let resident = |servers: &[Server]| servers.iter().map(Server::resident_bytes).sum::<u64>();
    let (resident_empty, size_empty) = (resident(&servers), target.size_bytes().await);

    // The outage: every settlement records an effect, and every attempt fails.
    let down_at = Instant::now();
    let (made, created) = create(&urls, count).await;
    let authorized = each(&urls, &made, "payment_authorize").await;
    let settled = each(&urls, &made, "payment_settle").await;
    let recorded = down_at.elapsed();
    // Down long enough for the sweeps to try, fail and back off, however small the run.
    tokio::time::sleep_until((down_at + LEAST_OUTAGE).into()).await;
    let (resident_waiting, size_waiting) = (resident(&servers), target.size_bytes().await);
    println!(
        "{} {replicas}: {count} payments created in {:.1} s, authorized in {:.1} s, settled in {:.1} s, the processor down",
        kind.name(),
        created.as_secs_f64(),
        authorized.as_secs_f64(),
        settled.as_secs_f64()
    );

    // The service is back: the backlog drains.
    std::fs::remove_file(&outage).expect("the outage ends");
    let up_at = Instant::now();
    let deadline = up_at + Duration::from_secs(config.timers_patience);
    let mut resident_peak = resident_waiting;
    let mut settled = Notices::new(&dir, "settled");
    let drained = loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        resident_peak = resident_peak.max(resident(&servers));
        let (_, keys) = settled.count();
        if keys >= count as usize || Instant::now() > deadline {
            break up_at.elapsed();
        }
    };
    for server in servers {
        server.stop().await;
    }
    let (lines, keys) = settled.count();

    // The attempts, as the hook logged them: during the outage, and after.
    let log = attempts(&outage);
    let failed = log.iter().filter(|a| !a.up).count();
    let most_under_way = log.iter().map(|a| a.under_way).max().unwrap_or(0);
    let most_attempts = log.iter().map(|a| a.attempt).max().unwrap_or(0);
    let mut per_second: BTreeMap<u64, usize> = BTreeMap::new();
    for attempt in log.iter().filter(|a| !a.up) {
        *per_second.entry(attempt.at_ms / 1_000).or_default() += 1;
    }
    let busiest = per_second.values().copied().max().unwrap_or(0);
    let mut by_attempt: BTreeMap<u32, usize> = BTreeMap::new();
    for attempt in log.iter().filter(|a| !a.up) {
        *by_attempt.entry(attempt.attempt).or_default() += 1;
    }
    println!("{} {replicas}: failed attempts by their number: {by_attempt:?}", kind.name());
    if std::env::var_os("BACKLOG_SECONDS").is_some() {
        println!("{} {replicas}: failed attempts a second: {:?}", kind.name(), per_second.values().collect::<Vec<_>>());
        let mut delivered: BTreeMap<u64, usize> = BTreeMap::new();
        for attempt in log.iter().filter(|a| a.up) {
            *delivered.entry(attempt.at_ms / 1_000).or_default() += 1;
        }
        println!("{} {replicas}: deliveries a second (second: count): {delivered:?}", kind.name());
    }
    let average = failed as f64 / per_second.len().max(1) as f64;

    // None left pending or dead: a sample of the records.
    let store = target.open().await;
    let mut rng = Rng::new(3);
    let (mut pending, mut dead) = (0, 0);
    for _ in 0..1_000.min(count) {
        let tenant = rng.below(TENANTS as u64) as usize;
        let id = &made[tenant][rng.below(made[tenant].len() as u64) as usize];
        let record = store.load(&StoreKey::tenant_instance(&format!("t{tenant}"), "payment", id)).await;
        let record = record.expect("a record");
        pending += record.effects.len();
        dead += record.dead_effects.len();
    }
    drop(store);

    let mb = |bytes: u64| bytes as f64 / 1e6;
    println!(
        "\n| store | replicas | effects | recorded in (down) | RSS empty / waiting / peak draining (MB) | store empty / waiting (MB) | drained in | per s | attempts failed | busiest second / average | most under way in a server | most attempts of one | delivered (lines / keys) | sample pending / dead |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {replicas} | {count} | {:.1} s | {:.0} / {:.0} / {:.0} | {:.1} / {:.1} | {:.1} s | {:.0} | {failed} | {busiest} / {average:.0} | {most_under_way} | {most_attempts} | {lines} / {keys} | {pending} / {dead} |",
        kind.name(),
        recorded.as_secs_f64(),
        mb(resident_empty),
        mb(resident_waiting),
        mb(resident_peak),
        mb(size_empty),
        mb(size_waiting),
        drained.as_secs_f64(),
        count as f64 / drained.as_secs_f64(),
    );
    assert!(failed > 0 && most_attempts > 1, "the outage failed attempts, which were tried again");
    assert_eq!((lines, keys), (count as usize, count as usize), "every effect delivered once per key");
    assert_eq!((pending, dead), (0, 0), "none of the sample is left pending or dead");
    target.drop_store().await;
    let _ = std::fs::remove_dir_all(&dir);
}

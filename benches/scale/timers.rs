//! Item 2: timers due at once. `TIMERS` payments are created (32 tenants, a connection
//! each), then authorized, which starts each one's `after` deadline (`--after
//! authorized=<lapse>`, a lapse longer than the authorizing takes). The servers are then
//! stopped until every deadline has passed, and started again (1 replica, or `REPLICAS`
//! on one shared store): at that moment all of them are due at once, as a business's
//! quotes at midnight, or a fleet back from an outage. Meanwhile other calls arrive at a
//! fixed open-loop rate (`RATE` a second: a status read or a creation, in turn).
//!
//! It measures how long until every payment has lapsed and its entry effect
//! (`release_authorization`, a line in the notices log) was dispatched, that each lapsed
//! once (the store's counts, and the history of a sample) and was released once
//! (distinct idempotency keys), and the other calls' p99 during the sweep against the
//! same load once it is over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolgate::store::StoreKey;

use crate::Config;
use crate::driver::{Caller, Latencies, Rng};
use crate::payments::{Made, NEW_PAYMENT, Notices, TENANTS, create, each, payment, payments_args, start, token};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// One of the other calls: when it was sent, to which tool, and how long it took.
type Sent = (Instant, &'static str, Duration);

/// The other calls: `rate` a second, open loop (sent on time whether or not the earlier
/// ones were answered), through the replicas in turn; each latency kept with the moment
/// it was sent.
struct Background {
    stop: Arc<AtomicBool>,
    sent: Arc<Mutex<Vec<Sent>>>,
    bad: Arc<Mutex<Vec<String>>>,
    ticker: tokio::task::JoinHandle<()>,
}

impl Background {
    fn start(urls: Vec<String>, made: Made, rate: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let bad = Arc::new(Mutex::new(Vec::new()));
        let (flag, keep, wrong) = (stop.clone(), sent.clone(), bad.clone());
        let ticker = tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut rng = Rng::new(57);
            let http = Caller::client();
            let mut n = 0usize;
            while !flag.load(Ordering::Relaxed) {
                every.tick().await;
                n += 1;
                let tenant = rng.below(TENANTS as u64) as usize;
                let url = urls[n % urls.len()].clone();
                let (tool, arguments) = if n.is_multiple_of(2) {
                    let ids = &made[tenant];
                    ("payment_status", payment(&ids[rng.below(ids.len() as u64) as usize]))
                } else {
                    ("payment_create", NEW_PAYMENT.to_string())
                };
                let (keep, wrong, http) = (keep.clone(), wrong.clone(), http.clone());
                tokio::spawn(async move {
                    let at = Instant::now();
                    // One client for all (building one is milliseconds of the load's own
                    // CPU, which the sweep's busy cores turned into seconds of queueing);
                    // a call on a connection no other call is using: an open loop must
                    // not queue behind a slow one.
                    let mut caller = Caller::sharing(&http, &url, &token(tenant));
                    match caller.call(tool, &arguments).await {
                        Ok(took) => keep.lock().unwrap().push((at, tool, took)),
                        Err(error) => wrong.lock().unwrap().push(error),
                    }
                });
            }
        });
        Background { stop, sent, bad, ticker }
    }

    /// The latencies of the calls to `tool` (any: `None`) sent between `from` and `to`.
    fn between(&self, from: Instant, to: Instant, tool: Option<&str>) -> Latencies {
        let mut latencies = Latencies::default();
        for (at, called, took) in self.sent.lock().unwrap().iter() {
            if *at >= from && *at < to && tool.is_none_or(|t| t == *called) {
                latencies.push(*took);
            }
        }
        latencies
    }

    /// Each tool's p99 during and after the sweep, and the slowest call sent in each
    /// second from `started`: where a stall is, and which calls it holds.
    fn tell(&self, started: Instant, swept_at: Instant, ended: Instant) {
        for tool in ["payment_status", "payment_create"] {
            let (mut during, mut after) =
                (self.between(started, swept_at, Some(tool)), self.between(swept_at, ended, Some(tool)));
            println!(
                "  {tool}: p99 during {:.1} ms (max {:.1}), after {:.1} ms (max {:.1})",
                during.quantile_ms(0.99),
                during.max_ms(),
                after.quantile_ms(0.99),
                after.max_ms()
            );
        }
        let mut seconds = Vec::new();
        let mut from = started;
        while from < ended {
            let to = from + Duration::from_secs(1);
            seconds.push(format!("{:.0}", self.between(from, to, None).max_ms()));
            from = to;
        }
        println!("  the slowest call sent in each second (ms): {}", seconds.join(" "));
    }

    /// Stops sending, and answers the calls that failed once those in flight are done.
    async fn stop(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = (&mut self.ticker).await;
        // Let the calls in flight finish.
        tokio::time::sleep(Duration::from_secs(2)).await;
        self.bad.lock().unwrap().clone()
    }
}

/// Runs item 2 on `kind` with `replicas` servers.
pub(crate) async fn run(kind: Kind, replicas: usize, config: &Config) {
    let count = config.timers;
    let dir = config.dir.join(format!("timers-{}-{replicas}", kind.name()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let target = Target::fresh(kind, 0, &config.dir).await;

    // Creations: payments in `created`, no deadline yet. Their pace sets the lapse.
    let server = start(&target, &payments_args(config, &dir, 86_400)).await;
    let (made, created) = create(std::slice::from_ref(&server.url), count).await;
    server.stop().await;
    println!("{} {replicas}: {count} payments created in {:.1} s", kind.name(), created.as_secs_f64());
    let lapse_s = (std::env::var("LAPSE").ok().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| 5 + 2 * created.as_secs_f64().ceil() as u64);

    // Authorizations: keyed transitions sent by clients, each starting its payment's
    // deadline `lapse_s` later.
    let server = start(&target, &payments_args(config, &dir, lapse_s)).await;
    let authorizing_started = Instant::now();
    let authorizing = each(std::slice::from_ref(&server.url), &made, "payment_authorize").await;
    server.stop().await;
    println!(
        "{} {replicas}: authorized in {:.1} s; each lapses {lapse_s} s later",
        kind.name(),
        authorizing.as_secs_f64()
    );
    let mut releases = Notices::new(&dir, "released");
    let (fired_early, _) = releases.count();
    assert_eq!(
        fired_early,
        0,
        "payments lapsed while they were being authorized: set LAPSE above {} s",
        authorizing.as_secs()
    );
    // Every deadline passes while no server runs.
    let all_due = authorizing_started + authorizing + Duration::from_secs(lapse_s) + Duration::from_millis(500);
    tokio::time::sleep_until(all_due.into()).await;

    // All due at once: the replicas start, and the other calls with them.
    let args = payments_args(config, &dir, lapse_s);
    let mut servers = Vec::new();
    for _ in 0..replicas {
        servers.push(start(&target, &args).await);
    }
    let started = Instant::now();
    let mut background = Background::start(servers.iter().map(|s| s.url.clone()).collect(), made.clone(), config.rate);
    let mut resident_peak = 0;
    let deadline = started + Duration::from_secs(config.timers_patience);
    let released = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        resident_peak = resident_peak.max(servers.iter().map(Server::resident_bytes).sum::<u64>());
        let (_, keys) = releases.count();
        if keys >= count as usize || Instant::now() > deadline {
            break started.elapsed();
        }
    };
    let swept_at = Instant::now();
    // The same load, once nothing is due: the steady state to compare with.
    let steady_for = released.max(Duration::from_secs(10));
    tokio::time::sleep(steady_for).await;
    let ended = Instant::now();
    let bad = background.stop().await;
    let (during, steady) = (background.between(started, swept_at, None), background.between(swept_at, ended, None));
    background.tell(started, swept_at, ended);
    for server in servers {
        server.stop().await;
    }
    let (lines, keys) = releases.count();

    // Each payment lapsed once: the counts say none is left authorized, and the history of
    // a sample shows one lapse each.
    let store = target.open().await;
    let counter = store.capabilities().counts.expect("the store counts");
    let mut lapsed = 0;
    let mut left = 0;
    for tenant in 0..TENANTS {
        let counts = counter.instances(&format!("t{tenant}"), "payment").await.expect("counts");
        lapsed += counts.states.get("lapsed").copied().unwrap_or(0);
        left += counts.states.get("authorized").copied().unwrap_or(0);
    }
    let history = store.capabilities().history.expect("the store keeps histories");
    let mut sample_twice = 0;
    let mut rng = Rng::new(7);
    for _ in 0..1_000.min(count) {
        let tenant = rng.below(TENANTS as u64) as usize;
        let id = &made[tenant][rng.below(made[tenant].len() as u64) as usize];
        let key = StoreKey::tenant_instance(&format!("t{tenant}"), "payment", id);
        let entries = history.history(&key).await.expect("a history");
        if entries.iter().filter(|e| e.to == "lapsed").count() != 1 {
            sample_twice += 1;
        }
    }
    drop(store);

    let (mut during, mut steady) = (during, steady);
    println!(
        "\n| store | replicas | due at once | all lapsed and released in | per s | authorized by clients in | ratio | other calls p99 during / steady (ms) | their count | releases (lines / keys) | lapsed (left) | sample with ≠1 lapse | peak RSS (MB) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {replicas} | {count} | {:.1} s | {:.0} | {:.1} s | {:.2} | {:.1} / {:.1} | {} / {} | {lines} / {keys} | {lapsed} ({left}) | {sample_twice} | {:.0} |",
        kind.name(),
        released.as_secs_f64(),
        count as f64 / released.as_secs_f64(),
        authorizing.as_secs_f64(),
        released.as_secs_f64() / authorizing.as_secs_f64(),
        during.quantile_ms(0.99),
        steady.quantile_ms(0.99),
        during.len(),
        steady.len(),
        resident_peak as f64 / 1e6,
    );
    assert!(bad.is_empty(), "{} other calls failed; the first: {}", bad.len(), bad[0]);
    assert_eq!(keys as u64, count, "every payment's release was dispatched within {} s", config.timers_patience);
    assert_eq!((lapsed, left), (count, 0), "every payment lapsed, and none is left authorized");
    assert_eq!(sample_twice, 0, "each payment of the sample lapsed once");
    target.drop_store().await;
    let _ = std::fs::remove_dir_all(&dir);
}

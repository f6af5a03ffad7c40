//! A fault-injection history check, in the manner of Jepsen and Elle: clients drive the
//! payments example (creations with minted ids, transitions racing on one payment,
//! settlements as MCP tasks, some cancelled, authorizations lapsing by timer, effects on
//! settlement and on lapse) through three replicas on one store, while a nemesis kills a
//! replica (-9) and starts it again, pauses one (SIGSTOP) for longer than a task's heartbeat, or
//! restarts the store (with persistence). Every call's invocation and outcome is recorded;
//! when the faults stop, the checker compares them with what the store holds
//! (`check.rs`).
//!
//! It runs only when `TOOLGATE_FAULTS_SECONDS` says for how long (`.ci/run` runs a short
//! one; the figures of a long one are in `BENCHMARKS.md`):
//!
//! ```text
//! TOOLGATE_FAULTS_SECONDS=300 cargo test -p toolgate --test integration faults:: -- --nocapture
//! ```
//!
//! Faults stay on loopback and end with the load; a paused replica is always resumed.

pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod cluster;
pub(crate) mod load;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use client::{Answer, Caller};
use cluster::{Cluster, REPLICAS, Store};
use load::{History, Rng};

/// How many clients drive the load.
const CLIENTS: usize = 10;

/// How long the load runs, if this run checks at all (else it says why it skips).
fn seconds() -> Option<u64> {
    let Ok(given) = std::env::var("TOOLGATE_FAULTS_SECONDS") else {
        eprintln!("SKIPPED: the fault check runs when TOOLGATE_FAULTS_SECONDS is set (`.ci/run` sets it)");
        return None;
    };
    let seconds = given.parse().ok();
    if seconds.is_none() {
        eprintln!("TOOLGATE_FAULTS_SECONDS is not a number of seconds: {given}");
    }
    seconds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_under_faults_hold_on_redis() {
    let Some(seconds) = seconds() else { return };
    let Some(redis) = crate::own_redis::OwnRedis::start() else { return };
    run(Store::Redis(redis), seconds).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_under_faults_hold_on_postgres() {
    let Some(seconds) = seconds() else { return };
    let Some(postgres) = crate::own_postgres::OwnPostgres::start() else { return };
    run(Store::Postgres(postgres), seconds).await;
}

/// A fault the nemesis injected, and when (ms since the load began).
#[derive(Debug)]
struct Fault {
    at_ms: u64,
    what: String,
}

async fn run(store: Store, seconds: u64) {
    let name = store.name();
    let cluster = Arc::new(Cluster::start(store, CLIENTS).await);
    let history = Arc::new(History::default());
    let began = Instant::now();
    let until = began + Duration::from_secs(seconds);
    // Tasks of their own: a store's restart blocks the nemesis's thread, not the clients.
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (cluster, history) = (cluster.clone(), history.clone());
            tokio::spawn(async move { load::client(&cluster, &history, client, began, until).await })
        })
        .collect();
    let faults = tokio::spawn({
        let cluster = cluster.clone();
        async move { nemesis(&cluster, began, until).await }
    });
    for client in clients {
        client.await.expect("a client of the load panicked");
    }
    let faults = faults.await.expect("the nemesis panicked");

    // Healed: every replica runs; the timers and effects the faults delayed come due.
    let finals = settle_and_read(&cluster, &history).await;
    let ops = history.ops.lock().unwrap().clone();
    let verdict = check::check(&ops, &finals, &cluster.notices());
    let report = json!({
        "store": name,
        "seconds": seconds,
        "replicas": REPLICAS,
        "clients": CLIENTS,
        "operations": ops.len(),
        "calls": verdict.calls,
        "refusals_said": verdict.said,
        "payments": finals.len(),
        "transitions_in_histories": verdict.transitions,
        "faults": faults.iter().map(|f| format!("{} ms: {}", f.at_ms, f.what)).collect::<Vec<_>>(),
        "effects_committed": verdict.effects_committed,
        "effect_deliveries": verdict.deliveries,
        "anomalies": verdict.anomalies,
    });
    let pretty = serde_json::to_string_pretty(&report).unwrap();
    eprintln!("fault check on {name}:\n{pretty}");
    if let Some(dir) = std::env::var_os("TOOLGATE_FAULTS_REPORT_DIR") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(std::path::Path::new(&dir).join(format!("faults-{name}.json")), &pretty);
    }
    assert!(verdict.anomalies.is_empty(), "{} anomalies on {name}: {:#?}", verdict.anomalies.len(), verdict.anomalies);
    let acknowledged = ops.iter().filter(|op| matches!(op.outcome, load::Outcome::Ok)).count();
    assert!(acknowledged >= 20 && !faults.is_empty(), "the run proved little: {acknowledged} calls acknowledged");
}

/// Injects a fault every one and a half to three seconds until `until`, one at a time, each kind in
/// turn: kill -9 and a restart of a replica, a pause of one longer than a task's heartbeat
/// (inside its lease), and a restart of the store.
async fn nemesis(cluster: &Cluster, began: Instant, until: Instant) -> Vec<Fault> {
    let mut rng = Rng::new(0xFA17 ^ began.elapsed().as_nanos() as u64);
    let mut faults = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_millis(1_500 + rng.below(1_500))).await;
        // Each fault ends by `until` at the latest (a pause is 6.5 s).
        if Instant::now() + Duration::from_secs(7) > until {
            return faults;
        }
        let replica = rng.below(REPLICAS as u64) as usize;
        let at_ms = began.elapsed().as_millis() as u64;
        // The kinds in turn, so that a short run sees each.
        let what = match faults.len() % 3 {
            0 => {
                cluster.store.restart(Duration::from_millis(500 + rng.below(1_000))).await;
                format!("restart of the {} store", cluster.store.name())
            }
            1 => {
                cluster.kill_and_restart(replica, Duration::from_millis(500 + rng.below(1_000))).await;
                format!("kill -9 of replica {replica}, restarted")
            }
            _ => {
                cluster.pause(replica, Duration::from_millis(6_500)).await;
                format!("SIGSTOP of replica {replica} for 6.5 s (a task's heartbeat lapses at 5 s)")
            }
        };
        faults.push(Fault { at_ms, what });
    }
}

/// Once the load and the faults end: reads every payment the calls named, with its history,
/// through the replicas, and again those that may still move — authorized ones (to lapse),
/// ones whose lapse a read applied before a sweep committed it, and ones whose effect is not
/// received yet — until none is left (or 30 s).
pub(crate) async fn settle_and_read(cluster: &Cluster, history: &History) -> HashMap<String, check::Final> {
    let ids: Vec<String> = {
        let ops = history.ops.lock().unwrap();
        let mut ids: Vec<String> = ops.iter().filter_map(|op| op.payment.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    };
    let reader = Caller::new(&cluster::token(0));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut finals = HashMap::new();
    let mut unsure = ids;
    loop {
        // Read (again) what may still move: sixteen at a time.
        let read: Vec<(String, Option<check::Final>)> = futures::stream::iter(unsure)
            .map(|id| {
                let reader = &reader;
                async move {
                    let found = read(cluster, reader, &id).await;
                    (id, found)
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for (id, found) in read {
            match found {
                Some(found) => finals.insert(id, found),
                None => finals.remove(&id),
            };
        }
        let notices: std::collections::HashSet<(String, String)> = (cluster.notices().iter())
            .map(|n| {
                (n["payment"].as_str().unwrap_or_default().into(), n["notice"].as_str().unwrap_or_default().into())
            })
            .collect();
        let received = |id: &str, kind: &str| notices.contains(&(id.to_string(), kind.to_string()));
        unsure = (finals.iter())
            .filter(|(id, found)| {
                // A lapse a read applies (due, not yet committed by a sweep) is in the history
                // once the sweep commits it, a moment later.
                let history_ends = found.entries.last().and_then(|e| e["to"].as_str()).unwrap_or("created");
                history_ends != found.state
                    || found.state == "authorized"
                    || (found.state == "settled" && !received(id, "settled"))
                    || (found.state == "lapsed" && !received(id, "released"))
            })
            .map(|(id, _)| id.clone())
            .collect();
        if unsure.is_empty() || Instant::now() > deadline {
            return finals;
        }
        // Lapses are 10 s after authorization; effects are retried 2 s after a lost attempt.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A payment's state, description and history, through any replica (retried while one is
/// unreachable); `None` when the store does not have it.
async fn read(cluster: &Cluster, reader: &Caller, id: &str) -> Option<check::Final> {
    let arguments = json!({ "domain": "payment", "payment_id": id });
    for attempt in 0..20 {
        let live = cluster.live();
        let url = &live[attempt % live.len()];
        let (Answer::Result(status), Answer::Result(history)) = (
            reader.call(url, "payment_status", arguments.clone(), false).await,
            reader.call(url, "payment_history", arguments.clone(), false).await,
        ) else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let (status, history) = (&status["structuredContent"], &history["structuredContent"]);
        if status["code"] == "NOT_FOUND" {
            return None;
        }
        if status["code"].is_string() || history["code"].is_string() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        return Some(check::Final {
            state: status["state"].as_str().unwrap_or_default().to_string(),
            description: status["description"].as_str().unwrap_or_default().to_string(),
            entries: history["entries"].as_array().cloned().unwrap_or_default(),
        });
    }
    panic!("{id} could not be read through any replica");
}

//! A rolling restart behind a real load balancer (issue 56): three replicas of the payments
//! example on one store, behind HAProxy configured as committed in `deploy/haproxy.cfg`
//! (checks on `/readyz` every 300 ms, `fall 1`, connection failures retried on another
//! replica). Calls go through HAProxy at a fixed rate — creations, keyed transitions,
//! settlements (some as MCP tasks), and a few listening streams — while every replica in
//! turn is sent SIGTERM, waited for, started again on its port, and waited for until its
//! `/readyz` answers 200; twice round. No call may fail or go unanswered, and the fault
//! check's checker (`faults/check.rs`) finds no acknowledged transition lost or doubled.
//!
//! It runs only when `TOOLGATE_ROLL_SECONDS` says for how long the load runs (at least
//! as long as the roll takes; `.ci/run` runs a short one, docs/stores-and-replicas.md has
//! a long one's figures):
//!
//! ```text
//! TOOLGATE_ROLL_SECONDS=60 cargo test -p toolgate --test integration roll:: -- --nocapture --test-threads=1
//! ```
//!
//! `TOOLGATE_ROLL_RATE` sets the calls a second (100), `TOOLGATE_ROLL_ROUNDS` the rounds
//! (2), `TOOLGATE_ROLL_DRAIN_DELAY` the replicas' `--drain-delay` (1 s), and
//! `TOOLGATE_ROLL_SIGNAL` the signal that stops them (`TERM`; `KILL` stops them as SIGTERM
//! did before it drained, and shows what the drain saves), and `TOOLGATE_ROLL_RETRY_ON`
//! HAProxy's `retry-on` (the committed `conn-failure empty-response`; `conn-failure`
//! alone shows what the drain saves without the retry of a connection closed unanswered).
//! `TOOLGATE_ROLL_FROM=PATH` starts each replica first from an older build's payments
//! binary, so the roll replaces a fleet of that build with this one: a rolling upgrade
//! (`scripts/rolling-upgrade.sh` builds the previous commit and runs it).

mod haproxy;
mod listen;
mod load;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::faults::check;
use crate::faults::cluster::{Cluster, Exit, REPLICAS, Store, token};
use crate::faults::load::History;
use haproxy::{Haproxy, server_name};
use load::{Class, Record};

/// How many clients hold a listening stream.
const LISTENERS: usize = 3;

/// When the steady state's window begins (ms into the load): after the first connections.
const STEADY_FROM_MS: u64 = 2_000;

/// What one run does.
struct Settings {
    seconds: u64,
    rate: u64,
    rounds: usize,
    drain_delay: String,
    signal: String,
    retry_on: Option<String>,
}

/// The run's settings, if this run rolls at all (else it says why it skips).
fn settings() -> Option<Settings> {
    let Ok(given) = std::env::var("TOOLGATE_ROLL_SECONDS") else {
        eprintln!("SKIPPED: the rolling restart runs when TOOLGATE_ROLL_SECONDS is set (`.ci/run` sets it)");
        return None;
    };
    let number = |name: &str, default: u64| match std::env::var(name) {
        Ok(given) => given.parse().unwrap_or_else(|_| panic!("{name} is not a whole number: {given}")),
        Err(_) => default,
    };
    Some(Settings {
        seconds: given.parse().unwrap_or_else(|_| panic!("TOOLGATE_ROLL_SECONDS is not a number of seconds: {given}")),
        rate: number("TOOLGATE_ROLL_RATE", 100),
        rounds: number("TOOLGATE_ROLL_ROUNDS", 2) as usize,
        drain_delay: std::env::var("TOOLGATE_ROLL_DRAIN_DELAY").unwrap_or_else(|_| "1".into()),
        signal: std::env::var("TOOLGATE_ROLL_SIGNAL").unwrap_or_else(|_| "TERM".into()),
        retry_on: std::env::var("TOOLGATE_ROLL_RETRY_ON").ok(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_haproxy_fails_no_call_on_postgres() {
    let Some(settings) = settings() else { return };
    let Some(postgres) = crate::own_postgres::OwnPostgres::start() else { return };
    run(Store::Postgres(postgres), &settings).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_haproxy_fails_no_call_on_redis() {
    let Some(settings) = settings() else { return };
    let Some(redis) = crate::own_redis::OwnRedis::start() else { return };
    run(Store::Redis(redis), &settings).await;
}

/// One replica's restart: when it was told to stop (ms into the load), how it exited, and
/// how long until it was ready again.
struct Restart {
    replica: usize,
    signal_ms: u64,
    exit: Exit,
    ready_ms: u64,
}

async fn run(store: Store, settings: &Settings) {
    let name = store.name();
    let ports: Vec<u16> = (0..REPLICAS)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
        .collect();
    let drain = ["--drain-delay", settings.drain_delay.as_str()];
    let cluster = Cluster::start_with(store, load::PRINCIPALS, "roll", &ports, &drain).await;
    let Some(balancer) = Haproxy::start(&cluster.dir, &ports, settings.retry_on.as_deref()).await else { return };

    let (history, record) = (Arc::new(History::default()), Arc::new(Record::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let driver =
        tokio::spawn(load::drive(balancer.url(), settings.rate, began, history.clone(), record.clone(), stop.clone()));
    let streams = Arc::new(Mutex::new(listen::Streams::default()));
    let listeners: Vec<_> = (0..LISTENERS)
        .map(|n| tokio::spawn(listen::listen(balancer.url(), token(n), stop.clone(), streams.clone())))
        .collect();

    // Steady state, then the roll.
    let ms = || began.elapsed().as_millis() as u64;
    tokio::time::sleep(Duration::from_secs((settings.seconds / 4).max(5))).await;
    let roll_began_ms = ms();
    let mut restarts = Vec::new();
    for _ in 0..settings.rounds {
        for (replica, &port) in ports.iter().enumerate() {
            let signal_ms = ms();
            let exit = tokio::time::timeout(Duration::from_secs(60), cluster.stop(replica, &settings.signal))
                .await
                .unwrap_or_else(|_| panic!("replica {replica} did not exit within 60 s of SIG{}", settings.signal));
            cluster.start_replica(replica).await;
            ready(port).await;
            restarts.push(Restart { replica, signal_ms, exit, ready_ms: ms() });
        }
    }
    let roll_ended_ms = ms();
    let end = (began + Duration::from_secs(settings.seconds)).max(Instant::now() + Duration::from_secs(2));
    tokio::time::sleep_until(end.into()).await;
    stop.store(true, Ordering::Relaxed);
    let sent = driver.await.expect("the load panicked");
    for listener in listeners {
        listener.await.expect("a listener panicked");
    }

    // The history against the store, once the lapses and effects the run started are done.
    let finals = crate::faults::settle_and_read(&cluster, &history).await;
    let ops = history.ops.lock().unwrap().clone();
    let verdict = check::check(&ops, &finals, &cluster.notices());

    let sent_calls: Vec<_> = record.sent.lock().unwrap().clone();
    let (calls, polls): (Vec<_>, Vec<_>) = sent_calls.into_iter().partition(|s| s.what != "tasks/get");
    assert_eq!(calls.len() as u64, sent, "every call sent was recorded");
    let tally = Tally::of(&calls);
    let poll_tally = Tally::of(&polls);
    // Settlements take a second by design: the others' latency, and theirs apart.
    let latency = |from: u64, to: u64, settle: bool| {
        let mut took: Vec<u64> = (calls.iter())
            .filter(|s| s.invoked_ms >= from && s.invoked_ms < to && !matches!(s.class, Class::Unanswered(_)))
            .filter(|s| (s.what == "payment_settle") == settle)
            .map(|s| s.completed_ms - s.invoked_ms)
            .collect();
        took.sort_unstable();
        let at = |q: f64| took.get(((took.len() as f64 * q) as usize).min(took.len().saturating_sub(1))).copied();
        format!(
            "p50 {} ms, p99 {} ms, max {} ms ({} calls)",
            at(0.50).unwrap_or(0),
            at(0.99).unwrap_or(0),
            took.last().unwrap_or(&0),
            took.len()
        )
    };
    let tasks = record.tasks.lock().unwrap().clone();
    // A task outlived its replica when that replica was told to stop while it ran.
    let outlived: Vec<String> = (tasks.iter())
        .filter_map(|task| {
            let replica = (0..REPLICAS).find(|&r| task.replica.as_deref() == Some(server_name(r).as_str()))?;
            let restart = restarts
                .iter()
                .find(|r| r.replica == replica && r.signal_ms >= task.created_ms && r.signal_ms <= task.ended_ms)?;
            Some(format!(
                "{} on replica {replica}: created {} ms before the signal, ended {} ms after it: {}",
                task.id,
                restart.signal_ms - task.created_ms,
                task.ended_ms - restart.signal_ms,
                task.ended
            ))
        })
        .collect();
    let streams = std::mem::take(&mut *streams.lock().unwrap());
    let balancer_log = balancer.log();
    let abnormal: Vec<&String> = balancer_log.iter().filter(|line| line.contains(" /mcp ")).collect();
    let went_down: Vec<&String> = balancer_log.iter().filter(|line| line.contains(" is DOWN")).collect();

    let mut summary = format!(
        "rolling restart on {name}: {} replicas behind HAProxy (retry-on {}), stopped by SIG{}, --drain-delay {}, {} calls/s for {} s, {} rounds\n",
        REPLICAS,
        settings.retry_on.as_deref().unwrap_or("as committed"),
        settings.signal,
        settings.drain_delay,
        settings.rate,
        settings.seconds,
        settings.rounds
    );
    let mut line = |text: String| {
        summary.push_str("  ");
        summary.push_str(&text);
        summary.push('\n');
    };
    line(format!("calls sent: {sent}"));
    line(format!("answered ok: {}", tally.ok));
    line(format!("answered refusals: {} {:?}", tally.refused.values().sum::<usize>(), tally.refused));
    line(format!("answered errors, not refusals: {} {:?}", tally.failed.len(), first(&tally.failed)));
    line(format!("without an answer: {} {:?}", tally.unanswered.len(), first(&tally.unanswered)));
    for (what, class) in [("answered errors", true), ("calls without an answer", false)] {
        let mut by_tool: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
        for sent in calls.iter().filter(|s| {
            if class { matches!(s.class, Class::Failed(_)) } else { matches!(s.class, Class::Unanswered(_)) }
        }) {
            let entry = by_tool.entry(sent.what).or_insert((0, u64::MAX, 0));
            *entry = (entry.0 + 1, entry.1.min(sent.invoked_ms), entry.2.max(sent.invoked_ms));
        }
        for (tool, (count, from, to)) in by_tool {
            line(format!("  {what}: {count} of {tool}, sent from {from} to {to} ms"));
        }
    }
    line(format!(
        "task polls: {} (ok {}, failed {}, without an answer {})",
        polls.len(),
        poll_tally.ok,
        poll_tally.failed.len(),
        poll_tally.unanswered.len()
    ));
    line(format!(
        "acknowledged transitions lost or doubled, and other anomalies: {} (of {} transitions in {} payments)",
        verdict.anomalies.len(),
        verdict.transitions,
        finals.len()
    ));
    line(format!("tasks: {}; outlived their replica: {}", tasks.len(), outlived.len()));
    for task in &outlived {
        line(format!("  {task}"));
    }
    for (what, settle) in [("creations and transitions", false), ("settlements (1 s each)", true)] {
        line(format!("latency of {what}:"));
        line(format!("  steady state before the roll: {}", latency(STEADY_FROM_MS, roll_began_ms, settle)));
        line(format!("  during the roll: {}", latency(roll_began_ms, roll_ended_ms, settle)));
    }
    line(format!(
        "roll: {} ms, from {roll_began_ms} to {roll_ended_ms} ms into the load",
        roll_ended_ms - roll_began_ms
    ));
    for restart in &restarts {
        line(format!(
            "  replica {} at {} ms: exit code {:?}, {} ms from the signal to the exit, ready again {} ms after the signal",
            restart.replica,
            restart.signal_ms,
            restart.exit.code,
            restart.exit.took.as_millis(),
            restart.ready_ms - restart.signal_ms
        ));
    }
    line(format!(
        "listening streams: {} opened, {} acknowledged, {} ended by the server, {} cut {:?}, {} not opened {:?}, {} open at the end",
        streams.opened,
        streams.acknowledged,
        streams.ended,
        streams.cut.len(),
        first(&streams.cut),
        streams.not_opened.len(),
        first(&streams.not_opened),
        streams.open_at_end
    ));
    line(format!("HAProxy took a replica out {} times: {:#?}", went_down.len(), first_of(&went_down)));
    line(format!("HAProxy logged {} abnormal requests: {:#?}", abnormal.len(), first_of(&abnormal)));
    eprintln!("{summary}");

    assert!(verdict.anomalies.is_empty(), "{} anomalies on {name}: {:#?}", verdict.anomalies.len(), verdict.anomalies);
    let failed = tally.failed.len() + poll_tally.failed.len();
    let unanswered = tally.unanswered.len() + poll_tally.unanswered.len();
    // Failures before the roll are the machine's, not the roll's: the store did not keep up
    // with the rate (an open loop then piles calls up until they time out).
    let before_roll = (calls.iter())
        .filter(|s| s.invoked_ms < roll_began_ms && matches!(s.class, Class::Failed(_) | Class::Unanswered(_)))
        .count();
    assert_eq!(
        before_roll, 0,
        "{before_roll} calls failed or went unanswered on {name} before the roll began: this machine does not \
         sustain {} calls/s (lower TOOLGATE_ROLL_RATE):\n{summary}",
        settings.rate
    );
    assert_eq!((failed, unanswered), (0, 0), "calls failed or went unanswered on {name}:\n{summary}");
    assert!(streams.not_opened.is_empty(), "listening streams could not be opened on {name}:\n{summary}");
    assert!(restarts.iter().all(|r| r.exit.code == Some(0)), "a replica did not exit 0 on {name}:\n{summary}");
    assert!(tally.ok as u64 >= sent / 2, "the run proved little: {} of {sent} calls ok", tally.ok);
}

/// Requests counted by how they were answered.
#[derive(Default)]
struct Tally {
    ok: usize,
    refused: BTreeMap<String, usize>,
    failed: Vec<String>,
    unanswered: Vec<String>,
}

impl Tally {
    fn of(sent: &[load::Sent]) -> Self {
        let mut tally = Self::default();
        for sent in sent {
            match &sent.class {
                Class::Ok => tally.ok += 1,
                Class::Refused(code) => *tally.refused.entry(format!("{code} ({})", sent.what)).or_default() += 1,
                Class::Failed(why) => tally.failed.push(format!("{} at {} ms: {why}", sent.what, sent.invoked_ms)),
                Class::Unanswered(why) => {
                    tally.unanswered.push(format!("{} at {} ms: {why}", sent.what, sent.invoked_ms))
                }
            }
        }
        tally
    }
}

/// The first few of `items`: a summary's sample.
fn first(items: &[String]) -> &[String] {
    &items[..items.len().min(5)]
}

/// The first few of `lines`.
fn first_of<'a>(lines: &'a [&'a String]) -> &'a [&'a String] {
    &lines[..lines.len().min(8)]
}

/// Waits until the replica on `port` answers `/readyz` with 200, asked directly.
async fn ready(port: u16) {
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..600 {
        if crate::shutdown::get(&url, "/readyz", Some("127.0.0.1")).await.0 == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the replica on port {port} was not ready within 30 s of serving");
}

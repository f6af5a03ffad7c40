//! A Redis that can forget is refused, or told: the server refuses to start on a Redis
//! that keeps no file synced on each write and has no replica (unless `--redis-volatile`),
//! waits for a replica's acknowledgement when that is what keeps a write, and fails closed
//! when the data under a running server vanishes — no key minted twice.

use std::time::Duration;

use serde_json::json;
use toolgate::store::{FlowStore, RedisDurability, RedisStore, Snapshot, StoreError, StoreKey};

use crate::common::clients::Lifecycle;
use crate::common::{self, TestClient};
use crate::own_redis::OwnRedis;
use crate::replicas::{KEY, TIMED_TRAVELLER, TIMED_TRAVELLER_ARG, fresh_invoice, inv, replica};

/// What the invoice server prints when it will not start on `url`.
async fn refused_start(url: &str) -> String {
    let started = tokio::process::Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--store", url])
        .env(KEY.0, KEY.1)
        .output();
    let output = tokio::time::timeout(common::PATIENCE, started).await.expect("the server exits").unwrap();
    assert!(!output.status.success(), "the server started on a Redis that can forget");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_redis_that_forgets_is_refused_at_start_unless_the_server_accepts_losing_state() {
    let Some(volatile) = OwnRedis::start_keeping(&["--appendonly", "no"]) else { return };
    let stderr = refused_start(&volatile.url()).await;
    for named in ["`appendonly no`", "appendfsync always", "--redis-volatile"] {
        assert!(stderr.contains(named), "the refusal names {named}: {stderr}");
    }
    let Some(everysec) = OwnRedis::start_keeping(&["--appendonly", "yes", "--appendfsync", "everysec"]) else {
        return;
    };
    let stderr = refused_start(&everysec.url()).await;
    assert!(stderr.contains("`appendfsync everysec`") && stderr.contains("appendfsync always"), "{stderr}");

    // Told, it serves.
    let (_server, url) = replica("invoice", &volatile.url(), &["--redis-volatile"]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    assert_eq!(client.ok("invoice_submit", inv(&fresh_invoice())).await["state"], "review");
}

/// Redis emptied under a running server (what a Redis that kept nothing looks like after a
/// restart, or a promoted replica that never had the data): the next call is refused with
/// `STORE_UNAVAILABLE`, retryable, and writes nothing — the quote counter is not started
/// again, so `Q-1` is never minted twice.
#[tokio::test]
async fn a_redis_emptied_under_a_running_server_fails_closed_and_mints_no_key_twice() {
    let Some(redis) = OwnRedis::start() else { return };
    let (_server, url) = replica("travel", &redis.url(), &["--token", TIMED_TRAVELLER_ARG]).await;
    let client = TestClient::http_as(&url, Lifecycle::Session, Some(TIMED_TRAVELLER)).await;
    client.ok("switch_domain", json!({ "domain": "bus", "reason": "a bus" })).await;
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2,
    });
    let quote = client.ok("bus_search", search.clone()).await["quote_id"].as_str().unwrap().to_string();
    assert!(redis.ask(&["keys", "toolgate:*:record"]).contains(&quote), "the quote is in Redis");

    assert!(redis.cli(&["flushall"]));
    for _ in 0..3 {
        let (refused, is_error) = client.call("bus_search", search.clone()).await;
        assert!(is_error, "a search on an emptied Redis was answered: {refused}");
        assert_eq!(refused["code"], "STORE_UNAVAILABLE", "{refused}");
        assert!(refused["retry_after_ms"].as_u64().is_some(), "{refused}");
    }
    let records = redis.ask(&["keys", "toolgate:*:record"]);
    assert!(records.is_empty(), "nothing was written after the data vanished: {records}");
}

/// A Redis without a file of its own, with a replica: each write is acknowledged once the
/// replica has it (`WAIT`); with the replica gone, a write is reported as of unknown outcome,
/// never as done.
#[tokio::test]
async fn a_write_to_a_redis_kept_by_its_replica_is_acknowledged_once_the_replica_has_it() {
    let Some(primary) = OwnRedis::start_keeping(&["--appendonly", "no"]) else { return };
    let Some(copy) = OwnRedis::replica_of(&primary) else { return };
    for _ in 0..100 {
        if copy.ask(&["info", "replication"]).contains("master_link_status:up") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let store = RedisStore::connect(&primary.url()).await.expect("a Redis with a replica is accepted");
    assert_eq!(store.durability(), RedisDurability::Replica);
    let key = StoreKey::instance("invoice", "replicated");
    let v1 = store.compare_and_set(&key, 0, &Snapshot::default().with_state("invoice", "review")).await.unwrap();
    assert!(copy.ask(&["keys", "toolgate:*:record"]).contains("replicated"), "the replica has the write");

    drop(copy);
    let unknown = store.compare_and_set(&key, v1, &Snapshot::default().with_state("invoice", "approved")).await;
    assert!(matches!(unknown, Err(StoreError::OutcomeUnknown(_))), "{unknown:?}");
}

/// A commit Redis made is reported made even when the step after it fails: indexing when
/// the instance is next due is a second command, and a Redis that refuses it (here an ACL
/// that keeps the index read-only; in the fault check, Redis restarting between the two)
/// once made the call say `STORE_UNAVAILABLE`, nothing committed, over a committed record.
#[tokio::test]
async fn a_commit_made_is_reported_made_when_indexing_its_deadline_fails() {
    let Some(redis) = OwnRedis::start() else { return };
    let user = ["ACL", "SETUSER", "toolgate", "on", ">s3cret-password", "~toolgate:{*", "~toolgate:marker"];
    assert!(redis.cli(&[&user[..], &["%R~toolgate:due", "&*", "+@all"]].concat()), "the ACL user is made");
    let url = redis.url().replacen("redis://", "redis://toolgate:s3cret-password@", 1);
    let store = RedisStore::connect(&url).await.expect("the store connects as the user");
    let key = StoreKey::instance("payment", "PAY-1");
    let in_a_minute =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64 + 60_000;
    let due = Snapshot { due_at_ms: Some(in_a_minute), ..Default::default() };
    let written = store.compare_and_set(&key, 0, &due.with_state("payment", "authorized")).await;
    assert!(written.is_ok(), "the commit was made, and reported failed: {written:?}");
    assert_eq!(store.load(&key).await.unwrap().state_of("payment", "created"), "authorized");
}

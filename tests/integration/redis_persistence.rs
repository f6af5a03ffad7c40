//! A Redis that can forget is refused, or told: the server refuses to start on a Redis
//! that keeps no file synced on each write and has no replica (unless `--redis-volatile`),
//! waits for a replica's acknowledgement when that is what keeps a write, and fails closed
//! when the data under a running server vanishes, goes back to a backup, or stops being
//! kept — no key minted twice; after a restore and a full restart, `redis-restored` keeps
//! keys from being minted twice.

use std::path::Path;
use std::process::Stdio;
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
    let v1 = store.commit(&key, 0, &Snapshot::default().with_state("invoice", "review"), None, None).await.unwrap();
    assert!(copy.ask(&["keys", "toolgate:*:record"]).contains("replicated"), "the replica has the write");

    drop(copy);
    let unknown = store.commit(&key, v1, &Snapshot::default().with_state("invoice", "approved"), None, None).await;
    assert!(matches!(unknown, Err(StoreError::OutcomeUnknown(_))), "{unknown:?}");
}

/// A commit writes the index of when the instance is next due in its own script, first of
/// its writes: a Redis that refuses the index (here an ACL that keeps it read-only) refuses
/// the whole commit, which writes nothing and is reported not made. (The index was once a
/// second command after the script; a Redis refusing it, or restarting between the two,
/// left a committed record reported as not committed.)
#[tokio::test]
async fn a_commit_redis_cannot_index_writes_nothing_and_is_reported_not_made() {
    let Some(redis) = OwnRedis::start() else { return };
    let user = ["ACL", "SETUSER", "toolgate", "on", ">s3cret-password", "~toolgate:{*", "~toolgate:marker"];
    assert!(redis.cli(&[&user[..], &["%R~toolgate:due", "&*", "+@all"]].concat()), "the ACL user is made");
    let url = redis.url().replacen("redis://", "redis://toolgate:s3cret-password@", 1);
    let store = RedisStore::connect(&url).await.expect("the store connects as the user");
    let key = StoreKey::instance("payment", "PAY-1");
    let in_a_minute =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64 + 60_000;
    let due = Snapshot { due_at_ms: Some(in_a_minute), ..Default::default() };
    let written = store.commit(&key, 0, &due.with_state("payment", "authorized"), None, None).await;
    assert!(matches!(written, Err(StoreError::Unavailable(_))), "{written:?}");
    assert_eq!(store.load(&key).await.unwrap().version, 0, "a refused commit wrote the record");
    let written = redis.ask(&["keys", "toolgate:*"]);
    assert!(!written.contains("PAY-1"), "a refused commit wrote: {written}");
}

/// The payments example's clerks, each in a tenant of its own (each tenant's `PAY-n` are
/// minted from a counter of its own).
const ACME: &str = "acme-clerk-token-0123456789";
const GLOBEX: &str = "globex-clerk-token-0123456789";

/// A payments server on `store`, writing its log (stderr) to `dir/<name>.log`; and a
/// client for each clerk.
async fn payments(store: &str, dir: &Path, name: &str) -> (tokio::process::Child, TestClient, TestClient) {
    let tokens = dir.join("tokens.toml");
    let clerks = [(ACME, "acme"), (GLOBEX, "globex")].map(|(secret, tenant)| {
        format!("[[token]]\nsecret = \"{secret}\"\nprincipal = \"clerk\"\ntenant = \"{tenant}\"\nscopes = [\"payments:create\"]\n")
    });
    std::fs::write(&tokens, clerks.concat()).unwrap();
    let log = dir.join(format!("{name}.log"));
    let server = tokio::process::Command::new(common::example_binary("payments"))
        .args(["--http", "127.0.0.1:0", "--store", store, "--tokens", tokens.to_str().unwrap()])
        .args(["--otp-outbox", dir.join("otp.jsonl").to_str().unwrap()])
        .env(KEY.0, KEY.1)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let serving = async {
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(url) =
                text.split("serving Streamable HTTP at ").nth(1).and_then(|r| r.split_whitespace().next())
            {
                return url.to_string();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let url = tokio::time::timeout(common::PATIENCE, serving).await.expect("the payments server serves");
    let acme = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ACME)).await;
    let globex = TestClient::http_as(&url, Lifecycle::Sessionless, Some(GLOBEX)).await;
    (server, acme, globex)
}

fn new_payment() -> serde_json::Value {
    json!({ "domain": "payment", "description": "order", "amount": { "amount": "5.00", "currency": "USD" } })
}

fn payment(id: &str) -> serde_json::Value {
    json!({ "domain": "payment", "payment_id": id })
}

/// Creates a payment; returns its id.
async fn create(clerk: &TestClient) -> String {
    clerk.ok("payment_create", new_payment()).await["payment_id"].as_str().unwrap().to_string()
}

/// The log at `log` as text, its colours taken out.
fn log_text(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut plain = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(escape) = rest.find('\x1b') {
        plain.push_str(&rest[..escape]);
        rest = &rest[escape..];
        rest = rest.find('m').map_or("", |end| &rest[end + 1..]);
    }
    plain.push_str(rest);
    plain
}

/// The first line of the log at `log` that contains `needle`, once written.
async fn logged(log: &Path, needle: &str) -> String {
    let written = async {
        loop {
            let text = log_text(log);
            if let Some(line) = text.lines().find(|line| line.contains(needle)) {
                return line.to_string();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    match tokio::time::timeout(common::PATIENCE, written).await {
        Ok(line) => line,
        Err(_) => panic!("no line says `{needle}` in {}", log_text(log)),
    }
}

/// Whether `clerk`'s call is refused `STORE_UNAVAILABLE` within `within`, asked every 100 ms.
async fn refused_within(clerk: &TestClient, within: Duration) -> Option<serde_json::Value> {
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        let (refused, is_error) = clerk.call("payment_create", new_payment()).await;
        if is_error {
            assert_eq!(refused["code"], "STORE_UNAVAILABLE", "{refused}");
            return Some(refused);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Redis restored from a backup under two running servers, as an operator restores one:
/// Redis stopped, its append-only files replaced by the backup's, Redis started again. It
/// is a full Redis, with the marker the servers know — but older than what they served:
/// `PAY-4` and `PAY-5` are not in it, and a payment voided after the backup is
/// `authorized` in it. Both servers notice Redis went back (its clock is lower than the
/// one they saw), refuse every call with `STORE_UNAVAILABLE` and say so in their log,
/// giving both values: `PAY-4` is not minted twice, the voided payment is not shown
/// authorized.
#[tokio::test]
async fn a_redis_restored_from_a_backup_under_running_servers_fails_closed_and_mints_no_key_twice() {
    let Some(redis) = OwnRedis::start() else { return };
    let dir = common::scratch_dir("rollback");
    let (_a, a, _) = payments(&redis.url(), &dir, "a").await;
    let (_b, b, _) = payments(&redis.url(), &dir, "b").await;
    let voided = create(&a).await;
    a.ok("payment_authorize", payment(&voided)).await;
    create(&b).await;
    create(&a).await;
    let backup = redis.backup();
    assert_eq!([create(&b).await, create(&a).await], ["PAY-4", "PAY-5"]);
    b.ok("payment_void", payment(&voided)).await;
    let seen = redis.ask(&["get", "toolgate:clock"]);
    // Each server reads the store every second: both have seen the last write.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    redis.halt();
    redis.restore(&backup);
    let _ = std::fs::remove_dir_all(&backup);
    redis.run();
    let found = redis.ask(&["get", "toolgate:clock"]);
    for clerk in [&a, &b] {
        for (tool, arguments) in [("payment_create", new_payment()), ("payment_status", payment(&voided))] {
            for _ in 0..2 {
                let (refused, is_error) = clerk.call(tool, arguments.clone()).await;
                assert!(is_error, "`{tool}` on a Redis gone back was answered: {refused}");
                assert_eq!(refused["code"], "STORE_UNAVAILABLE", "{refused}");
            }
        }
    }
    let records = redis.ask(&["keys", "toolgate:*:record"]);
    assert!(!records.contains("PAY-4"), "PAY-4 was minted again: {records}");
    for log in ["a.log", "b.log"] {
        let line = logged(&dir.join(log), "Redis went back").await;
        assert!(line.contains("ERROR"), "{line}");
        assert!(line.contains(&format!("seen={seen}")) && line.contains(&format!("found={found}")), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `CONFIG SET appendonly no` under a running server (the Redis would lose what it
/// acknowledges from then on at its next restart): noticed within a second or two, every
/// call refused with `STORE_UNAVAILABLE` and the log naming the setting; serving again once
/// it is back on.
#[tokio::test]
async fn a_redis_that_stops_keeping_its_file_under_a_running_server_fails_closed() {
    let Some(redis) = OwnRedis::start() else { return };
    let dir = common::scratch_dir("aof-off");
    let (_server, clerk, _) = payments(&redis.url(), &dir, "server").await;
    create(&clerk).await;

    assert!(redis.cli(&["config", "set", "appendonly", "no"]));
    let refused = refused_within(&clerk, Duration::from_secs(3)).await;
    assert!(refused.is_some(), "a Redis that keeps no file any more was written to for 3 s");
    let (status, is_error) = clerk.call("payment_status", payment("PAY-1")).await;
    assert!(is_error && status["code"] == "STORE_UNAVAILABLE", "{status}");
    let line = logged(&dir.join("server.log"), "`appendonly no`").await;
    assert!(line.contains("ERROR") && line.contains("`appendonly yes`"), "{line}");

    assert!(redis.cli(&["config", "set", "appendonly", "yes"]));
    let serving = async {
        while clerk.call("payment_create", new_payment()).await.1 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(common::PATIENCE, serving).await.expect("the server serves again once the file is kept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// After a restore and a full restart no server remembers what it served, so the restore
/// procedure keeps ids from being issued twice: `redis-restored`, run once on the restored
/// Redis before the servers start, advances every key counter by its margin — also a
/// counter the backup does not have (globex's first payment came after it).
#[tokio::test]
async fn after_a_restore_and_a_full_restart_no_id_issued_before_is_minted_again() {
    let Some(redis) = OwnRedis::start() else { return };
    let dir = common::scratch_dir("restored");
    let (mut server, acme, globex) = payments(&redis.url(), &dir, "before").await;
    let mut issued = vec![create(&acme).await, create(&acme).await];
    let backup = redis.backup();
    issued.extend([create(&acme).await, create(&acme).await]);
    let globex_issued = create(&globex).await;
    server.kill().await.unwrap();
    redis.halt();
    redis.restore(&backup);
    let _ = std::fs::remove_dir_all(&backup);
    redis.run();

    let restored = tokio::process::Command::new(common::example_binary("payments"))
        .args(["redis-restored", "--store", &redis.url()])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&restored.stdout);
    assert!(restored.status.success(), "{said}{}", String::from_utf8_lossy(&restored.stderr));
    assert!(said.contains("1000000"), "it says the margin: {said}");

    let (_server, acme, globex) = payments(&redis.url(), &dir, "after").await;
    let new = create(&acme).await;
    assert!(!issued.contains(&new), "{new} was issued before the backup was restored: {issued:?}");
    assert_eq!(new, "PAY-1000003", "the counter (2 in the backup) advanced by the margin");
    let new = create(&globex).await;
    assert_ne!(new, globex_issued, "globex's counter, not in the backup, started again");
    assert_eq!(new, "PAY-1000001");
    let _ = std::fs::remove_dir_all(&dir);
}

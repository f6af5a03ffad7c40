//! Two replicas of one server sharing one real Redis (`TOOLGATE_TEST_REDIS_URL`; `.ci/run`
//! starts one): an invoice moves through both, a handle minted on one continues on the
//! other, and concurrent discharges split across them pay once. The tests that say
//! `_on_postgres` run the same on two replicas sharing one Postgres and no Redis
//! (`TOOLGATE_TEST_POSTGRES_URL`), with `postgres_replicas.rs`.

use crate::common;
use crate::own_redis::{OwnRedis, TLS_FIXTURES};

use crate::common::clients::Lifecycle;
use crate::common::{TestClient, spawn_http_example};
use serde_json::{Value, json};

pub(crate) const KEY: (&str, &str) = ("TOOLGATE_HANDLE_KEY", "replicas-test-handle-key-000000000001");

fn redis_url() -> Option<String> {
    let url = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty());
    if url.is_none() {
        eprintln!("SKIPPED: the replica tests need TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
    }
    url
}

/// The Postgres the replica tests also run on (`TOOLGATE_TEST_POSTGRES_URL`; `.ci/run`
/// starts one): a deployment on Postgres needs no Redis.
pub(crate) fn postgres_url() -> Option<String> {
    let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty());
    if url.is_none() {
        eprintln!(
            "SKIPPED: the Postgres replica tests need TOOLGATE_TEST_POSTGRES_URL (`.ci/run` starts a Postgres and sets it)"
        );
    }
    url
}

/// An invoice id no earlier run used (the test Redis outlives a run).
pub(crate) fn fresh_invoice() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("INV-{}", 1 + (nanos % 999_999_999_999) as u64)
}

pub(crate) fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

pub(crate) async fn replica(example: &str, redis: &str, extra: &[&str]) -> (tokio::process::Child, String) {
    replica_with(example, redis, extra, &[]).await
}

pub(crate) async fn replica_with(
    example: &str,
    redis: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let store = redis.to_string();
    let args: Vec<&str> = ["--store", store.as_str()].into_iter().chain(extra.iter().copied()).collect();
    let env: Vec<(&str, &str)> = [KEY].into_iter().chain(env.iter().copied()).collect();
    spawn_http_example(example, &args, &env).await
}

/// How many discharges' handlers finished, counted in Redis by the example's fault-test
/// hook (`INVOICE_TEST_DISCHARGE_COUNTER`), outside the processes.
async fn discharges_counted(redis: &str, key: &str) -> i64 {
    let client = redis::Client::open(redis).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let count: Option<i64> = redis::cmd("GET").arg(key).query_async(&mut connection).await.unwrap();
    count.unwrap_or(0)
}

#[tokio::test]
async fn an_invoice_approved_on_one_replica_is_discharged_on_the_other_once() {
    if let Some(redis) = redis_url() {
        an_invoice_approved_on_one_replica_is_discharged_on_the_other_once_on(&redis).await;
    }
}

#[tokio::test]
async fn an_invoice_approved_on_one_replica_is_discharged_on_the_other_once_on_postgres() {
    if let Some(postgres) = postgres_url() {
        an_invoice_approved_on_one_replica_is_discharged_on_the_other_once_on(&postgres).await;
    }
}

async fn an_invoice_approved_on_one_replica_is_discharged_on_the_other_once_on(store: &str) {
    let ((_a, url_a), (_b, url_b)) = tokio::join!(replica("invoice", store, &[]), replica("invoice", store, &[]));
    let a = TestClient::http_as(&url_a, Lifecycle::Sessionless, None).await;
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    let id = fresh_invoice();
    a.ok("invoice_submit", inv(&id)).await;
    a.ok("invoice_approve", inv(&id)).await;
    assert_eq!(b.ok("invoice_view", inv(&id)).await["state"], "approved");
    assert_eq!(b.ok("invoice_discharge", inv(&id)).await["state"], "discharged");
    let again = a.refused("invoice_discharge", inv(&id)).await;
    assert_eq!(again["current_state"], "discharged", "{again}");
}

/// An instance's data lives with its state in the shared store: an amount amended on one
/// replica (by the clerk, who may amend) is the amount the other shows and discharges.
#[tokio::test]
async fn an_invoice_amended_on_one_replica_keeps_its_amount_on_the_other() {
    let Some(redis) = redis_url() else { return };
    let clerk = ["--token", "clerk=replicas-test-clerk-token"];
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica("invoice", &redis, &clerk), replica("invoice", &redis, &clerk));
    let a = TestClient::http_as(&url_a, Lifecycle::Sessionless, Some("replicas-test-clerk-token")).await;
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    let id = fresh_invoice();
    let amended = json!({ "domain": "invoice", "id": id, "amount": { "amount": "123.45", "currency": "EUR" } });
    a.ok("invoice_amend", amended).await;
    assert_eq!(b.ok("invoice_view", inv(&id)).await["amount"]["amount"], "123.45");
    b.ok("invoice_submit", inv(&id)).await;
    a.ok("invoice_approve", inv(&id)).await;
    let paid = b.ok("invoice_discharge", inv(&id)).await;
    assert_eq!((paid["state"].as_str(), paid["amount"]["amount"].as_str()), (Some("discharged"), Some("123.45")));
}

#[tokio::test]
async fn concurrent_discharges_split_across_replicas_pay_once() {
    let Some(redis) = redis_url() else { return };
    let id = fresh_invoice();
    let counter_key = format!("toolgate-test:discharges:{id}");
    let counter = format!("{redis}#{counter_key}");
    let env = [("INVOICE_TEST_DISCHARGE_COUNTER", counter.as_str())];
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica_with("invoice", &redis, &[], &env), replica_with("invoice", &redis, &[], &env));
    let setup = TestClient::http_as(&url_a, Lifecycle::Sessionless, None).await;
    setup.ok("invoice_submit", inv(&id)).await;
    setup.ok("invoice_approve", inv(&id)).await;
    let calls = (0..50).map(|n| {
        let (url, id) = (if n % 2 == 0 { url_a.clone() } else { url_b.clone() }, id.clone());
        tokio::spawn(async move {
            let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
            client.call("invoice_discharge", inv(&id)).await
        })
    });
    let mut paid = 0;
    for call in calls.collect::<Vec<_>>() {
        let (content, is_error) = call.await.unwrap();
        if !is_error {
            paid += 1;
        } else {
            assert!(["FORBIDDEN", "FLOW_BUSY"].contains(&content["code"].as_str().unwrap()), "{content}");
        }
    }
    assert_eq!(paid, 1, "one discharge across both replicas");
    assert_eq!(
        discharges_counted(&redis, &counter_key).await,
        1,
        "the handler ran once, counted outside the processes"
    );
}

/// A replica killed while it holds an invoice's lease inside a slow handler: its lease runs
/// out, the other replica discharges the invoice, and the killed one's work never commits.
#[tokio::test]
async fn a_replica_killed_holding_a_lease_is_outlived_and_its_work_never_commits() {
    let Some(redis) = redis_url() else { return };
    let id = fresh_invoice();
    let counter_key = format!("toolgate-test:discharges:{id}");
    let counter = format!("{redis}#{counter_key}");
    let slow = [("INVOICE_TEST_DISCHARGE_PAUSE_MS", "3000"), ("INVOICE_TEST_DISCHARGE_COUNTER", counter.as_str())];
    let quick = [("INVOICE_TEST_DISCHARGE_COUNTER", counter.as_str())];
    let lease = ["--lease-ttl", "600ms"];
    let ((mut a, url_a), (_b, url_b)) =
        tokio::join!(replica_with("invoice", &redis, &lease, &slow), replica_with("invoice", &redis, &lease, &quick));
    let setup = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    setup.ok("invoice_submit", inv(&id)).await;
    setup.ok("invoice_approve", inv(&id)).await;

    // A takes the invoice's lease and sits in its handler.
    let on_a = {
        let (url, id) = (url_a.clone(), id.clone());
        tokio::spawn(async move {
            let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
            client.try_call("invoice_discharge", inv(&id)).await.map(drop)
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    a.kill().await.unwrap();
    let _ = on_a.await;

    // B waits out A's lease (600 ms, no longer renewed) and discharges.
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    let paid = b.ok("invoice_discharge", inv(&id)).await;
    assert_eq!(paid["state"], "discharged");
    assert_eq!(discharges_counted(&redis, &counter_key).await, 1, "only B's handler finished");
    assert_eq!(b.refused("invoice_discharge", inv(&id)).await["current_state"], "discharged");
}

#[tokio::test]
async fn a_handle_minted_on_one_replica_continues_on_the_other() {
    if let Some(redis) = redis_url() {
        a_handle_minted_on_one_replica_continues_on_the_other_on(&redis).await;
    }
}

#[tokio::test]
async fn a_handle_minted_on_one_replica_continues_on_the_other_on_postgres() {
    if let Some(postgres) = postgres_url() {
        a_handle_minted_on_one_replica_continues_on_the_other_on(&postgres).await;
    }
}

async fn a_handle_minted_on_one_replica_continues_on_the_other_on(store: &str) {
    let args = ["--stateless", "--token", TRAVELLER_ARG];
    let ((_a, url_a), (_b, url_b)) = tokio::join!(replica("travel", store, &args), replica("travel", store, &args));
    let a = TestClient::http_as(&url_a, Lifecycle::Sessionless, Some(TRAVELLER)).await;
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, Some(TRAVELLER)).await;
    let switched = a.ok("switch_domain", json!({ "domain": "bus", "reason": "the user wants a bus" })).await;
    let flow = switched["flow"].as_str().unwrap().to_string();
    // B reads the conversation A started: the active domain A selected. (No search here:
    // `bus_search`'s rate limit is counted across replicas, by another test.)
    let switched_again =
        b.ok("switch_domain", json!({ "domain": "flight", "reason": "the user wants a flight", "flow": flow })).await;
    assert_eq!(switched_again["previous_domain"], "bus", "{switched_again}");
}

#[tokio::test]
async fn a_declared_rate_limit_counts_across_replicas() {
    let Some(redis) = redis_url() else { return };
    // A quote is its searcher's: the traveller searches, with a token.
    let args = ["--stateless", "--token", TRAVELLER_ARG];
    let ((_a, url_a), (_b, url_b)) = tokio::join!(replica("travel", &redis, &args), replica("travel", &redis, &args));
    // `bus_search` allows 30 a minute per client; both replicas see this client as the
    // traveller. The test Redis outlives runs: start from an empty window.
    let client = redis::Client::open(redis.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg(r#"toolgate:{window:bus_search:principal:None:"traveller"}:calls"#)
        .query_async(&mut connection)
        .await
        .unwrap();
    let a = TestClient::http_as(&url_a, Lifecycle::Sessionless, Some(TRAVELLER)).await;
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, Some(TRAVELLER)).await;
    let switched = a.ok("switch_domain", json!({ "domain": "bus", "reason": "the user wants a bus" })).await;
    let mut flow = switched["flow"].as_str().unwrap().to_string();
    let mut admitted = 0;
    for n in 0..32 {
        let client = if n % 2 == 0 { &a } else { &b };
        let search = json!({
            "domain": "bus", "origin": "Madrid", "destination": "Valencia",
            "departure": "2026-12-04T08:00:00+01:00", "passengers": 2, "flow": flow,
        });
        let (content, is_error) = client.call("bus_search", search).await;
        if is_error {
            assert_eq!(content["code"], "RATE_LIMITED", "{content}");
        } else {
            admitted += 1;
            flow = content["flow"].as_str().unwrap().to_string();
        }
    }
    assert_eq!(admitted, 30, "30 a minute across both replicas");
}

/// Wrong one-time codes count across challenges and across replicas: three on one replica
/// and two on the other lock the tool on both (a count kept per process, or per challenge,
/// would never lock).
#[tokio::test]
async fn wrong_codes_given_to_two_replicas_lock_on_both() {
    let Some(redis) = redis_url() else { return };
    // The test Redis outlives runs: a tenant and a principal of this run's own.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("toolgate-replica-otp-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens.toml");
    let secret = format!("clerk-secret-{nanos}");
    let text = format!(
        "[[token]]\nsecret = \"{secret}\"\nprincipal = \"clerk-{nanos}\"\ntenant = \"t-{nanos}\"\nscopes = [\"payments:create\", \"payments:capture\"]\n"
    );
    std::fs::write(&tokens, text).unwrap();
    let outbox = dir.join("otp.jsonl");
    let args = ["--tokens", tokens.to_str().unwrap(), "--otp-outbox", outbox.to_str().unwrap()];
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica("payments", &redis, &args), replica("payments", &redis, &args));
    let a = TestClient::http_as(&url_a, Lifecycle::Sessionless, Some(&secret)).await;
    let b = TestClient::http_as(&url_b, Lifecycle::Sessionless, Some(&secret)).await;
    let amount = json!({ "amount": "50.00", "currency": "USD" });
    let created =
        a.ok("payment_create", json!({ "domain": "payment", "description": "order 9", "amount": amount })).await;
    let id = created["payment_id"].as_str().unwrap().to_string();
    a.ok("payment_authorize", json!({ "domain": "payment", "payment_id": id })).await;
    let arguments = json!({ "domain": "payment", "payment_id": id, "amount": amount, "request_id": "req-40000001" });
    let mut answers = Vec::new();
    for client in [&a, &a, &a, &b, &b] {
        let required = client.refused("payment_capture", arguments.clone()).await;
        assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
        let challenge_id = required["challenge_id"].as_str().unwrap().to_string();
        let otp = common::confirm::code_in(&outbox, &challenge_id);
        let mut confirming = arguments.clone();
        confirming["challenge_id"] = challenge_id.into();
        confirming["otp"] = (if otp == "000000" { "111111" } else { "000000" }).into();
        answers.push(client.refused("payment_capture", confirming).await["code"].as_str().unwrap().to_string());
    }
    assert_eq!(answers.last().map(String::as_str), Some("CONFIRMATION_LOCKED"), "{answers:?}");
    let on_a = a.refused("payment_capture", arguments).await;
    assert_eq!(on_a["code"], "CONFIRMATION_LOCKED", "the lock reached the other replica: {on_a}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn while_redis_is_down_calls_get_store_unavailable_and_when_it_is_back_they_continue() {
    let Some(redis) = OwnRedis::start() else { return };
    let (_server, url) = replica("invoice", &redis.url(), &[]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let id = fresh_invoice();
    client.ok("invoice_submit", inv(&id)).await;

    redis.stop();
    for tool in ["invoice_approve", "invoice_view"] {
        let (refused, is_error) = client.call(tool, inv(&id)).await;
        assert!(is_error, "{tool}: {refused}");
        assert_eq!(refused["code"], "STORE_UNAVAILABLE", "{tool}: {refused}");
        assert!(refused["retry_after_ms"].as_u64().is_some(), "{refused}");
    }

    redis.run();
    // The connection comes back by itself; the invoice is where it was.
    let mut approved = None;
    for _ in 0..100 {
        let (content, is_error) = client.call("invoice_approve", inv(&id)).await;
        if !is_error {
            approved = Some(content);
            break;
        }
        assert_eq!(content["code"], "STORE_UNAVAILABLE", "{content}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(approved.expect("the store came back")["state"], "approved");
}

#[tokio::test]
async fn a_session_on_one_replica_hears_when_another_replica_moves_what_it_lists() {
    if let Some(redis) = redis_url() {
        a_session_on_one_replica_hears_when_another_replica_moves_what_it_lists_on(&redis).await;
    }
}

#[tokio::test]
async fn a_session_on_one_replica_hears_when_another_replica_moves_what_it_lists_on_postgres() {
    if let Some(postgres) = postgres_url() {
        a_session_on_one_replica_hears_when_another_replica_moves_what_it_lists_on(&postgres).await;
    }
}

async fn a_session_on_one_replica_hears_when_another_replica_moves_what_it_lists_on(store: &str) {
    let ((_a, url_a), (_b, url_b)) = tokio::join!(replica("invoice", store, &[]), replica("invoice", store, &[]));
    let id = fresh_invoice();
    let mut watcher = TestClient::http_as(&url_a, Lifecycle::Session, None).await;
    watcher.ok("invoice_view", inv(&id)).await;
    assert!(watcher.tool_names().await.contains(&"invoice_submit".to_string()));
    let mover = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    mover.ok("invoice_submit", inv(&id)).await;
    watcher.expect_list_changed().await;
    assert!(watcher.tool_names().await.contains(&"invoice_approve".to_string()));
}

/// `rediss://`: two replicas share a Redis that speaks only TLS, its certificate signed by
/// a private authority given with `--redis-ca`; without it the certificate is not trusted
/// and the server does not start.
#[tokio::test]
async fn replicas_share_a_redis_over_tls_verified_against_the_given_authority() {
    let Some(redis) = OwnRedis::start_tls() else { return };
    let url = redis.url();
    let untrusted = tokio::process::Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--store", &url])
        .env(KEY.0, KEY.1)
        .output();
    let untrusted = tokio::time::timeout(common::PATIENCE, untrusted).await.expect("the server exits").unwrap();
    assert!(!untrusted.status.success(), "a Redis certificate no trusted authority signed was accepted");
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(stderr.contains("cannot reach Redis"), "{stderr}");

    let ca = format!("{TLS_FIXTURES}/ca.pem");
    let trusting = ["--redis-ca", ca.as_str()];
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica("invoice", &url, &trusting), replica("invoice", &url, &trusting));
    let (a, b) = (
        TestClient::http_as(&url_a, Lifecycle::Sessionless, None).await,
        TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await,
    );
    let id = fresh_invoice();
    a.ok("invoice_submit", inv(&id)).await;
    a.ok("invoice_approve", inv(&id)).await;
    assert_eq!(b.ok("invoice_discharge", inv(&id)).await["state"], "discharged");
    assert_eq!(a.refused("invoice_discharge", inv(&id)).await["code"], "FORBIDDEN");
}

/// Tells the time in a city's zone. Keeps nothing and reads no state.
#[toolgate::action(global)]
async fn replicas_clock(input: ClockRequest) -> Result<Clock, toolgate::ToolError> {
    Ok(Clock { city: input.city, reading: "12:00".into() })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ClockRequest {
    /// The city.
    city: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Clock {
    city: String,
    reading: String,
}

/// With Redis down, a tool that needs no state keeps answering (sessionless HTTP), and
/// nothing crashes; tools that need state get `STORE_UNAVAILABLE` (the test above).
#[tokio::test]
async fn while_redis_is_down_a_tool_that_needs_no_state_keeps_working() {
    let Some(redis) = OwnRedis::start() else { return };
    let store = toolgate::store::RedisStore::connect(&redis.url()).await.unwrap();
    let server = toolgate::Server::from_registry("replicas-clock")
        .store(store)
        .handle_key(KEY.1.as_bytes().to_vec())
        .sessionless()
        .build()
        .unwrap();
    let url = common::serve_in_process(server).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    client.ok("replicas_clock", json!({ "city": "Lisbon" })).await;
    redis.stop();
    assert!(!redis.cli(&["ping"]), "Redis is still up");
    for _ in 0..3 {
        assert_eq!(client.ok("replicas_clock", json!({ "city": "Lisbon" })).await["reading"], "12:00");
    }
}

/// The traveller's bearer token, and the travel example's `--token` for it.
const TRAVELLER: &str = "traveller-token-0123456789";
const TRAVELLER_ARG: &str = "traveller=traveller-token-0123456789";
/// Another traveller, whose searches no other test's rate limit has spent (the test Redis
/// is shared, and a limit counts per principal).
pub(crate) const TIMED_TRAVELLER: &str = "timed-traveller-token-0123456789";
pub(crate) const TIMED_TRAVELLER_ARG: &str = "timed=timed-traveller-token-0123456789";

/// Two replicas sweep one store: a quote made on one expires once — one commit, one history
/// entry, one audit record across both — whichever replica's sweep gets there first.
#[tokio::test]
async fn two_replicas_let_time_expire_a_quote_once() {
    let Some(redis) = redis_url() else { return };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("toolgate-replicas-timer-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (audit_a, audit_b, holds) = (dir.join("a.jsonl"), dir.join("b.jsonl"), dir.join("holds.jsonl"));
    let extra = |audit: &std::path::Path| -> Vec<String> {
        let (audit, holds) = (audit.to_str().unwrap(), holds.to_str().unwrap());
        ["--after", "quoted=1s", "--token", TIMED_TRAVELLER_ARG, "--audit-log", audit, "--holds-log", holds]
            .map(String::from)
            .to_vec()
    };
    let (args_a, args_b) = (extra(&audit_a), extra(&audit_b));
    let args_a: Vec<&str> = args_a.iter().map(String::as_str).collect();
    let args_b: Vec<&str> = args_b.iter().map(String::as_str).collect();
    let ((_a, url_a), (_b, _url_b)) =
        tokio::join!(replica("travel", &redis, &args_a), replica("travel", &redis, &args_b));
    let client = TestClient::http_as(&url_a, common::clients::Lifecycle::Session, Some(TIMED_TRAVELLER)).await;
    client.ok("switch_domain", json!({ "domain": "bus", "reason": "a bus" })).await;
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2,
    });
    let quote = client.ok("bus_search", search).await["quote_id"].as_str().unwrap().to_string();
    let ours =
        |lines: Vec<Value>| -> Vec<Value> { lines.into_iter().filter(|l| l["instance"] == quote.as_str()).collect() };
    for _ in 0..50 {
        if !ours(common::timer_lines(&audit_a)).is_empty() || !ours(common::timer_lines(&audit_b)).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // A few more sweeps of both replicas: still one.
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    let fired = [ours(common::timer_lines(&audit_a)), ours(common::timer_lines(&audit_b))].concat();
    assert_eq!(fired.len(), 1, "{fired:?}");
    // The quote is its searcher's, keyed in its searcher's tenant (the owner is a field of
    // the record): the tenant, then the machine and id.
    let connection = redis::Client::open(redis.as_str()).unwrap();
    let mut connection = connection.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("toolgate:{{tenant-instance:*:3:bus:{quote}}}:history"))
        .query_async(&mut connection)
        .await
        .unwrap();
    let [history_key] = keys.as_slice() else { panic!("one history for the quote: {keys:?}") };
    let history: Vec<String> =
        redis::cmd("LRANGE").arg(history_key).arg(0).arg(-1).query_async(&mut connection).await.unwrap();
    let timed: Vec<&String> = history.iter().filter(|entry| entry.contains(r#""principal":"timer""#)).collect();
    assert_eq!(timed.len(), 1, "{history:?}");
    // Its `entry` effect released the quote's held seats once, across both replicas.
    let released = crate::common::lines_naming(&holds, &quote, std::time::Duration::from_millis(1_000)).await;
    assert_eq!(released, 1, "the hold was asked to be released {released} times (a repeat is a second dispatch)");
    let _ = std::fs::remove_dir_all(&dir);
}

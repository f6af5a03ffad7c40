//! Calls that outlive their request (the MCP Tasks extension, 2026-07-28), through the
//! conformance example's task fixtures over sessionless Streamable HTTP: a task is stored
//! before it is announced, answers `tasks/get` from the store (after a restart too),
//! belongs to its caller, and a cancelled one commits nothing.

use crate::common;

use std::time::Duration;

use crate::common::raw::SessionlessClient;
use crate::common::spawn_http_example;
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `_meta` declaring the Tasks extension, as a client that opted in sends it.
fn opted_in() -> Value {
    json!({ "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } })
}

/// `tools/call` of `tool` from a client that declared the extension.
async fn call_as_task(client: &SessionlessClient, tool: &str, arguments: Value, headers: &[(&str, &str)]) -> Value {
    let params = json!({ "name": tool, "arguments": arguments, "_meta": opted_in() });
    client.request("tools/call", params, headers).await.result()
}

async fn task_request(
    client: &SessionlessClient,
    method: &str,
    task: &str,
    headers: &[(&str, &str)],
) -> common::raw::Reply {
    client.request(method, json!({ "taskId": task, "_meta": opted_in() }), headers).await
}

/// Polls `tasks/get` until the task ends (`completed`, `failed` or `cancelled`).
async fn settled(client: &SessionlessClient, task: &str, headers: &[(&str, &str)]) -> Value {
    for _ in 0..100 {
        let got = task_request(client, "tasks/get", task, headers).await.result();
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or_default()) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {task} still working after 10 s");
}

const A: &str = "task-owner-token-000000000001";
const B: &str = "task-other-token-000000000002";

fn tokens() -> Vec<String> {
    vec!["--token".into(), format!("alice={A}"), "--token".into(), format!("bob={B}")]
}

#[tokio::test]
async fn a_task_is_stored_before_it_is_announced_and_completes() {
    let args = tokens();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_server, url) = spawn_http_example("conformance", &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let discovered = client.request("server/discover", json!({}), &[]).await.result();
    assert!(discovered["capabilities"]["extensions"][TASKS].is_object(), "{discovered}");

    let alice = [("Authorization", &*format!("Bearer {A}"))].map(|(k, v)| (k, v.to_string()));
    let alice: Vec<(&str, &str)> = alice.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = call_as_task(&client, "slow_compute", json!({ "seconds": 1, "label": "x" }), &alice).await;
    assert_eq!(
        (created["resultType"].as_str(), created["status"].as_str()),
        (Some("task"), Some("working")),
        "{created}"
    );
    assert!(
        created["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0) && created["pollIntervalMs"].as_u64().is_some(),
        "{created}"
    );
    assert!(created.get("result").is_none() && created.get("content").is_none(), "{created}");
    let task = created["taskId"].as_str().unwrap().to_string();
    // Stored before it was announced: asked at once, it is there.
    let working = task_request(&client, "tasks/get", &task, &alice).await.result();
    assert_eq!((working["taskId"].as_str(), working["resultType"].as_str()), (Some(task.as_str()), Some("complete")));
    let done = settled(&client, &task, &alice).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "computed x in 1 s", "{done}");

    // Another caller, or none, is told the task does not exist, as for an id never made.
    let bob = [("Authorization", format!("Bearer {B}"))];
    let bob: Vec<(&str, &str)> = bob.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for headers in [&bob[..], &[][..]] {
        let refused = task_request(&client, "tasks/get", &task, headers).await.error();
        assert_eq!(refused["code"], -32602, "{refused}");
        let refused = task_request(&client, "tasks/cancel", &task, headers).await.error();
        assert_eq!(refused["code"], -32602, "{refused}");
    }
    let unknown = task_request(&client, "tasks/get", "no-such-task", &alice).await.error();
    assert_eq!(unknown["code"], -32602, "{unknown}");
    // A finished task cancelled stays as it was.
    let ack = task_request(&client, "tasks/cancel", &task, &alice).await.result();
    assert_eq!(ack, json!({ "resultType": "complete" }));
    assert_eq!(task_request(&client, "tasks/get", &task, &alice).await.result()["status"], "completed");
}

#[tokio::test]
async fn a_client_that_did_not_opt_in_gets_an_answer_or_is_told_what_it_lacks() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    // Optional: answered within the request.
    let (content, is_error) = client.call("slow_compute", json!({ "seconds": 0, "label": "now" })).await;
    assert!(!is_error, "{content}");
    let reply = client.call_with_headers("slow_compute", json!({ "seconds": 0, "label": "now" }), &[]).await.result();
    assert!(reply.get("taskId").is_none() && reply["content"][0]["text"] == "computed now in 0 s", "{reply}");
    // Required: -32021, naming the extension.
    let refused = client.call_with_headers("failing_job", json!({}), &[]).await.error();
    assert_eq!(refused["code"], -32021, "{refused}");
    assert!(refused["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{refused}");
    // …and a tool error inside a task is a completed task whose result says so.
    let created = call_as_task(&client, "failing_job", json!({}), &[]).await;
    let done = settled(&client, created["taskId"].as_str().unwrap(), &[]).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["isError"].as_bool()),
        (Some("completed"), Some(true)),
        "{done}"
    );
}

#[tokio::test]
async fn a_cancelled_task_stops_and_says_so() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let created = call_as_task(&client, "slow_compute", json!({ "seconds": 60, "label": "long" }), &[]).await;
    let task = created["taskId"].as_str().unwrap().to_string();
    let ack = task_request(&client, "tasks/cancel", &task, &[]).await.result();
    assert_eq!(ack, json!({ "resultType": "complete" }));
    let done = settled(&client, &task, &[]).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(done.get("result").is_none(), "{done}");
}

/// On the file store a task outlives the server that ran it.
#[tokio::test]
async fn a_finished_task_is_read_after_a_restart() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let file = std::env::temp_dir().join(format!("toolgate-tasks-{}-{nanos}.db", std::process::id()));
    let store = format!("sqlite:{}", file.display());
    // Kept 8 s from its creation.
    let args = ["--store", store.as_str(), "--task-ttl", "8"];
    let (mut first, url) = spawn_http_example("conformance", &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let created_at = std::time::Instant::now();
    let created = call_as_task(&client, "slow_compute", json!({ "seconds": 1, "label": "kept" }), &[]).await;
    assert_eq!(created["ttlMs"], 8_000, "{created}");
    let task = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(settled(&client, &task, &[]).await["status"], "completed");
    first.kill().await.unwrap();
    let (_second, url) = spawn_http_example("conformance", &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let again = task_request(&client, "tasks/get", &task, &[]).await.result();
    assert_eq!(
        (again["status"].as_str(), again["result"]["content"][0]["text"].as_str()),
        (Some("completed"), Some("computed kept in 1 s"))
    );
    assert!(created_at.elapsed() < Duration::from_secs(8), "the restart took too long for this test's ttl");
    // Past its `ttlMs` it is gone, as a task that never existed.
    tokio::time::sleep(Duration::from_secs(8).saturating_sub(created_at.elapsed()) + Duration::from_millis(300)).await;
    let gone = task_request(&client, "tasks/get", &task, &[]).await.error();
    assert_eq!(gone["code"], -32602, "{gone}");
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// A task that asks waits in `input_required` with its questions; `tasks/update` answers
/// them (a key it does not wait for is ignored; one answer of two leaves the other, at
/// once), then it completes.
#[tokio::test]
async fn a_task_that_asks_waits_for_tasks_update() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let meta =
        json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } } });
    let params = json!({ "name": "multi_input", "arguments": {}, "_meta": meta });
    let created = client.request("tools/call", params, &[]).await.result();
    let task = created["taskId"].as_str().unwrap().to_string();
    let mut waiting = Value::Null;
    for _ in 0..50 {
        waiting = task_request(&client, "tasks/get", &task, &[]).await.result();
        if waiting["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let keys: Vec<&String> = waiting["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm", "name"], "{waiting}");
    assert_eq!(waiting["inputRequests"]["name"]["method"], "elicitation/create", "{waiting}");

    let update = |responses: Value| {
        client.request("tasks/update", json!({ "taskId": task, "inputResponses": responses, "_meta": meta }), &[])
    };
    let ack = update(json!({ "name": { "action": "accept", "content": { "name": "Alice" } }, "unknown-key": {} }))
        .await
        .result();
    assert_eq!(ack, json!({ "resultType": "complete" }));
    // Read once, right after the ack, as the conformance suite does: the record says what
    // is still asked before `tasks/update` answers, not some time after.
    let half = task_request(&client, "tasks/get", &task, &[]).await.result();
    assert_eq!(half["status"], "input_required", "{half}");
    assert_eq!(half["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["confirm"], "{half}");
    update(json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })).await.result();
    let done = settled(&client, &task, &[]).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["content"][0]["text"].as_str()),
        (Some("completed"), Some("answered 2 questions")),
        "{done}"
    );
}

/// The extension is not defined under MCP 2025-11-25: a session of that revision gets
/// task-capable tools within their request, and a tool that runs only as a task is
/// refused with -32021, as for any client that did not declare the extension.
#[tokio::test]
async fn a_2025_11_25_session_never_gets_a_task() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let session = common::raw::RawSession::open(&url).await;
    let (content, is_error) = session.call("slow_compute", json!({ "seconds": 0, "label": "inline" })).await;
    assert!(!is_error, "{content}");
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": 0, "label": "inline" } });
    let reply = session.request("tools/call", params).await.result();
    assert!(reply.get("taskId").is_none() && reply["content"][0]["text"] == "computed inline in 0 s", "{reply}");
    let refused = session.request("tools/call", json!({ "name": "failing_job", "arguments": {} })).await.error();
    assert_eq!(refused["code"], -32021, "{refused}");
}

/// The extension is advertised only where it is served: not in the `initialize` reply of
/// a 2025-11-25 session (whose calls never become tasks), and in `server/discover` at
/// 2026-07-28, as rmcp's own client sees each.
#[tokio::test]
async fn the_extension_is_advertised_only_at_2026_07_28() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let capabilities = |client: &common::TestClient| {
        let info = client.service.peer_info().expect("the server's answer");
        serde_json::to_value(&info.capabilities).unwrap()
    };
    let session = common::TestClient::http(&url).await;
    let initialized = capabilities(&session);
    assert!(initialized.get("extensions").and_then(|e| e.get(TASKS)).is_none(), "{initialized}");
    let sessionless = common::TestClient::sessionless(&url).await;
    let discovered = capabilities(&sessionless);
    assert!(discovered["extensions"][TASKS].is_object(), "{discovered}");
}

/// Two replicas share a Redis store: a task run by one is read, answered and cancelled
/// through the other, and when the one running it dies, the other reports it `failed`.
#[tokio::test]
async fn another_replica_answers_cancels_and_reports_a_dead_runner() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    another_replica_answers_cancels_and_reports_a_dead_runner_on(&redis).await;
}

/// The same on two replicas sharing one Postgres and no Redis.
#[tokio::test]
async fn another_replica_answers_cancels_and_reports_a_dead_runner_on_postgres() {
    if let Some(postgres) = crate::replicas::postgres_url() {
        another_replica_answers_cancels_and_reports_a_dead_runner_on(&postgres).await;
    }
}

async fn another_replica_answers_cancels_and_reports_a_dead_runner_on(store: &str) {
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000001")];
    let args = ["--store", store];
    let ((mut a, url_a), (_b, url_b)) =
        tokio::join!(spawn_http_example("conformance", &args, &env), spawn_http_example("conformance", &args, &env));
    let (on_a, on_b) = (SessionlessClient::new(&url_a), SessionlessClient::new(&url_b));

    // Answered through B.
    let meta =
        json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } } });
    let created = on_a
        .request("tools/call", json!({ "name": "multi_input", "arguments": {}, "_meta": meta }), &[])
        .await
        .result();
    let task = created["taskId"].as_str().unwrap().to_string();
    for _ in 0..50 {
        if task_request(&on_b, "tasks/get", &task, &[]).await.result()["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let answers = json!({
        "name": { "action": "accept", "content": { "name": "Alice" } },
        "confirm": { "action": "accept", "content": { "confirm": true } },
    });
    let params = json!({ "taskId": task, "inputResponses": answers, "_meta": meta });
    on_b.request("tasks/update", params, &[]).await.result();
    let done = settled(&on_b, &task, &[]).await;
    assert_eq!(done["status"], "completed", "{done}");

    // Cancelled through B.
    let created = call_as_task(&on_a, "slow_compute", json!({ "seconds": 60, "label": "long" }), &[]).await;
    let task = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(task_request(&on_b, "tasks/cancel", &task, &[]).await.result(), json!({ "resultType": "complete" }));
    assert_eq!(settled(&on_b, &task, &[]).await["status"], "cancelled");

    // A dies while running one: B reports it failed once A's heartbeat lapses.
    let created = call_as_task(&on_a, "slow_compute", json!({ "seconds": 60, "label": "orphan" }), &[]).await;
    let task = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(task_request(&on_b, "tasks/get", &task, &[]).await.result()["status"], "working");
    a.kill().await.unwrap();
    tokio::time::sleep(Duration::from_millis(6_500)).await;
    let failed = task_request(&on_b, "tasks/get", &task, &[]).await.result();
    assert_eq!(
        (failed["status"].as_str(), failed["error"]["code"].as_i64()),
        (Some("failed"), Some(-32603)),
        "{failed}"
    );
    assert!(failed["statusMessage"].as_str().is_some_and(|m| m.contains("stopped")), "{failed}");
}

/// Issue 34 §5: `tasks/update` sent through another replica to a task whose runner died
/// keeps only answers to what the task asks, one per question. Fourteen updates of
/// 100 KB under keys it never asked added 1.4 MB to the record (and each update read and
/// rewrote it all); now they add nothing, and repeating an answer adds it once.
#[tokio::test]
async fn updates_to_a_task_whose_runner_died_do_not_grow_its_record() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000002")];
    let args = ["--store", redis.as_str()];
    let ((mut a, url_a), (_b, url_b)) =
        tokio::join!(spawn_http_example("conformance", &args, &env), spawn_http_example("conformance", &args, &env));
    let (on_a, on_b) = (SessionlessClient::new(&url_a), SessionlessClient::new(&url_b));
    let meta =
        json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { TASKS: {} } } });
    let created = on_a
        .request("tools/call", json!({ "name": "multi_input", "arguments": {}, "_meta": meta }), &[])
        .await
        .result();
    let task = created["taskId"].as_str().unwrap().to_string();
    for _ in 0..50 {
        if task_request(&on_b, "tasks/get", &task, &[]).await.result()["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    a.kill().await.unwrap();
    let client = redis::Client::open(redis.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let record = format!("toolgate:{{task:{task}}}:record");
    let mut size =
        async || -> usize { redis::cmd("HSTRLEN").arg(&record).arg("s").query_async(&mut connection).await.unwrap() };
    let before = size().await;
    assert!(before > 0, "no record at {record}");
    let big = "x".repeat(100_000);
    for i in 0..14 {
        let answers = json!({ format!("never-asked-{i}"): { "action": "accept", "content": { "name": big } } });
        let params = json!({ "taskId": task, "inputResponses": answers, "_meta": meta });
        on_b.request("tasks/update", params, &[]).await.result();
    }
    assert!(size().await < before + 1_000, "{} bytes grew to {}", before, size().await);
    for _ in 0..14 {
        let answers = json!({ "name": { "action": "accept", "content": { "name": big } } });
        let params = json!({ "taskId": task, "inputResponses": answers, "_meta": meta });
        on_b.request("tasks/update", params, &[]).await.result();
    }
    let after = size().await;
    assert!(after < before + 2 * big.len(), "one answer repeated 14 times: {before} bytes grew to {after}");
}

// ---------------------------------------------------------------------------------------
// Durable and gated: the payments example's `payment_settle`, a task that holds its
// payment while the processor settles it.

const CLERK: &str = "clerk-token-task-0123456789";
const AUDITOR: &str = "auditor-token-task-0123456789";
/// Operators of the console (`--console`): acme's, and another tenant's.
const OPERATOR: &str = "operator-token-task-0123456789";
const GLOBEX_OPERATOR: &str = "globex-operator-token-task-0123";

/// A tokens file with two principals of one tenant, both allowed to capture, and the
/// development outbox the example's confirmed tools need: the options to serve with.
fn payments_options(dir: &std::path::Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        format!(
            r#"
[[token]]
secret = "{CLERK}"
principal = "clerk"
tenant = "acme"
scopes = ["payments:create", "payments:capture"]

[[token]]
secret = "{AUDITOR}"
principal = "auditor"
tenant = "acme"
scopes = ["payments:create", "payments:capture"]

[[token]]
secret = "{OPERATOR}"
principal = "olga"
tenant = "acme"
scopes = ["toolgate:operator"]

[[token]]
secret = "{GLOBEX_OPERATOR}"
principal = "gus"
tenant = "globex"
scopes = ["toolgate:operator"]
"#
        ),
    )
    .unwrap();
    let outbox = dir.join("otp.jsonl");
    ["--tokens", tokens.to_str().unwrap(), "--otp-outbox", outbox.to_str().unwrap()].map(String::from).to_vec()
}

/// Serves the payments example with `payments_options` and `extra`.
async fn serve_payments(
    dir: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let options = payments_options(dir);
    let mut args: Vec<&str> = options.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    spawn_http_example("payments", &args, env).await
}

fn scratch(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::env::temp_dir().join(format!("toolgate-tasks-{name}-{}-{nanos}", std::process::id()))
}

fn bearer(token: &str) -> [(&'static str, String); 1] {
    [("Authorization", format!("Bearer {token}"))]
}

fn headers<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Creates and authorizes a payment of 25.00 USD as `who`; returns its id.
async fn authorized_payment(client: &SessionlessClient, who: &[(&str, &str)]) -> String {
    let create =
        json!({ "domain": "payment", "description": "order 9", "amount": { "amount": "25.00", "currency": "USD" } });
    let created = client.call_with_headers("payment_create", create, who).await.result();
    let id = created["structuredContent"]["payment_id"].as_str().unwrap_or_else(|| panic!("{created}")).to_string();
    let authorized =
        client.call_with_headers("payment_authorize", json!({ "domain": "payment", "payment_id": id }), who).await;
    assert_eq!(authorized.result()["structuredContent"]["state"], "authorized");
    id
}

/// The call ids of the `SETTLE` transitions the audit log at `audit` records, in order.
fn settled_by(audit: &std::path::Path) -> Vec<String> {
    let lines = std::fs::read_to_string(audit).unwrap();
    (lines.lines())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["event"] == "SETTLE")
        .map(|record| record["call_id"].as_str().unwrap().to_string())
        .collect()
}

/// `payment_settle` of `id` as a task; returns the task's id.
async fn settle_as_task(client: &SessionlessClient, id: &str, who: &[(&str, &str)]) -> String {
    let created = call_as_task(client, "payment_settle", json!({ "domain": "payment", "payment_id": id }), who).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_string()
}

/// The payment's state, read with `payment_status`.
async fn payment_state(client: &SessionlessClient, id: &str, who: &[(&str, &str)]) -> Value {
    let status = client.call_with_headers("payment_status", json!({ "domain": "payment", "payment_id": id }), who);
    status.await.result()["structuredContent"]["state"].clone()
}

#[tokio::test]
async fn a_payment_settling_as_a_task_is_busy_and_commits_once() {
    let dir = scratch("busy");
    let audit = dir.join("audit.jsonl");
    let args = ["--settle-seconds", "1.5", "--audit-log", audit.to_str().unwrap()];
    let (_server, url) = serve_payments(&dir, &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let (clerk, auditor) = (bearer(CLERK), bearer(AUDITOR));
    let (clerk, auditor) = (headers(&clerk), headers(&auditor));

    let id = authorized_payment(&client, &clerk).await;
    let task = settle_as_task(&client, &id, &clerk).await;
    // While it runs, every other change to the payment is refused, naming the task; a
    // read still answers, and shows the payment as it was.
    for (tool, who) in [("payment_void", &clerk), ("payment_settle", &auditor)] {
        let refused =
            client.call_with_headers(tool, json!({ "domain": "payment", "payment_id": id }), who).await.result();
        let refusal = &refused["structuredContent"];
        assert_eq!(refused["isError"], true, "{refused}");
        assert_eq!(
            (refusal["code"].as_str(), refusal["task_id"].as_str(), refusal["task_tool"].as_str()),
            (Some("TASK_RUNNING"), Some(task.as_str()), Some("payment_settle")),
            "{refused}"
        );
        assert!(refusal["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0), "{refused}");
    }
    assert_eq!(payment_state(&client, &id, &clerk).await, "authorized");
    // …and visibly busy: its history names the task at work on it.
    let history = client.call_with_headers("payment_history", json!({ "domain": "payment", "payment_id": id }), &clerk);
    let history = history.await.result();
    let running = &history["structuredContent"]["running_task"];
    assert_eq!(
        (running["task_id"].as_str(), running["tool"].as_str()),
        (Some(task.as_str()), Some("payment_settle")),
        "{history}"
    );
    // Another principal, of the same tenant, is told the task does not exist.
    assert_eq!(task_request(&client, "tasks/get", &task, &auditor).await.error()["code"], -32602);

    let done = settled(&client, &task, &clerk).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["state"], "settled", "{done}");
    assert_eq!(payment_state(&client, &id, &clerk).await, "settled");
    let history = client.call_with_headers("payment_history", json!({ "domain": "payment", "payment_id": id }), &clerk);
    let history = history.await.result();
    assert!(history["structuredContent"].get("running_task").is_none(), "{history}");
    let last = history["structuredContent"]["entries"].as_array().and_then(|e| e.last()).cloned().unwrap_or_default();
    assert_eq!((last["event"].as_str(), last["call_id"].as_str()), (Some("SETTLE"), Some(task.as_str())), "{history}");
    // Committed once, under the task's id; and the payment is free again (its state now
    // refuses a void, for its state, not for a task).
    assert_eq!(settled_by(&audit), vec![task.clone()]);
    let void = client.call_with_headers("payment_void", json!({ "domain": "payment", "payment_id": id }), &clerk);
    assert_eq!(void.await.result()["structuredContent"]["code"], "FORBIDDEN");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_cancelled_settlement_commits_nothing_and_frees_the_payment() {
    let dir = scratch("cancel");
    let (_server, url) = serve_payments(&dir, &["--settle-seconds", "60"], &[]).await;
    let client = SessionlessClient::new(&url);
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);

    let id = authorized_payment(&client, &clerk).await;
    let task = settle_as_task(&client, &id, &clerk).await;
    assert_eq!(
        task_request(&client, "tasks/cancel", &task, &clerk).await.result(),
        json!({ "resultType": "complete" })
    );
    let cancelled = settled(&client, &task, &clerk).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(payment_state(&client, &id, &clerk).await, "authorized");
    // Free again: the void goes through at once.
    let void = client.call_with_headers("payment_void", json!({ "domain": "payment", "payment_id": id }), &clerk);
    assert_eq!(void.await.result()["structuredContent"]["state"], "voided");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The console's tasks and timers (`/api/tasks`): a settlement running as a task is listed
/// in its tenant with its tool, status, caller and instance, then as cancelled once
/// cancelled; an authorized payment's lapse is among the timers due next; another tenant's
/// operator sees neither.
#[tokio::test]
async fn the_console_lists_a_tenants_tasks_and_the_timers_due_next() {
    let dir = scratch("console");
    let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let (_server, url) = serve_payments(&dir, &["--settle-seconds", "60", "--console", &console], &[]).await;
    let client = SessionlessClient::new(&url);
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);
    let settling = authorized_payment(&client, &clerk).await;
    let waiting = authorized_payment(&client, &clerk).await;
    let task = settle_as_task(&client, &settling, &clerk).await;

    let http = reqwest::Client::new();
    let page = |token: &'static str| {
        let (http, url) = (http.clone(), format!("http://{console}/api/tasks"));
        async move {
            let answer = http.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(answer.status(), 200);
            answer.json::<Value>().await.unwrap()
        }
    };
    let seen = page(OPERATOR).await;
    let listed = &seen["tasks"][0];
    assert_eq!(
        (listed["id"].as_str(), listed["tool"].as_str(), listed["status"].as_str(), listed["running"].as_bool()),
        (Some(task.as_str()), Some("payment_settle"), Some("working"), Some(true)),
        "{seen}"
    );
    assert_eq!((listed["principal"].as_str(), listed["instance"].as_str()), (Some("clerk"), Some(settling.as_str())));
    let timers = seen["timers"].as_array().unwrap();
    let lapse = timers.iter().find(|timer| timer["key"] == waiting.as_str()).unwrap_or_else(|| panic!("{seen}"));
    assert_eq!((lapse["machine"].as_str(), lapse["state"].as_str()), (Some("payment"), Some("authorized")), "{seen}");
    assert!(lapse["to"].is_string() && lapse["left_ms"].as_u64().is_some_and(|ms| ms > 0), "{seen}");
    let globex = page(GLOBEX_OPERATOR).await;
    assert_eq!(
        (globex["tasks"].as_array().unwrap().len(), globex["timers"].as_array().unwrap().len()),
        (0, 0),
        "{globex}"
    );

    task_request(&client, "tasks/cancel", &task, &clerk).await.result();
    assert_eq!(settled(&client, &task, &clerk).await["status"], "cancelled");
    let seen = page(OPERATOR).await;
    assert_eq!(
        (seen["tasks"][0]["status"].as_str(), seen["tasks"][0]["running"].as_bool()),
        (Some("cancelled"), Some(false))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn twenty_settlements_at_once_each_commit_once() {
    let dir = scratch("twenty");
    let audit = dir.join("audit.jsonl");
    let args = ["--settle-seconds", "1", "--audit-log", audit.to_str().unwrap(), "--max-tasks", "20"];
    let (_server, url) = serve_payments(&dir, &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);

    let ids = futures::future::join_all((0..20).map(|_| authorized_payment(&client, &clerk))).await;
    let tasks = futures::future::join_all(ids.iter().map(|id| settle_as_task(&client, id, &clerk))).await;
    // A 21st at once is past the bound: refused, and it never becomes a task.
    let one_more = authorized_payment(&client, &clerk).await;
    let refused =
        call_as_task(&client, "payment_settle", json!({ "domain": "payment", "payment_id": one_more }), &clerk).await;
    assert_eq!(
        (refused["structuredContent"]["code"].as_str(), refused.get("taskId")),
        (Some("RATE_LIMITED"), None),
        "{refused}"
    );
    let done = futures::future::join_all(tasks.iter().map(|task| settled(&client, task, &clerk))).await;
    for done in &done {
        assert_eq!(
            (done["status"].as_str(), done["result"]["structuredContent"]["state"].as_str()),
            (Some("completed"), Some("settled")),
            "{done}"
        );
    }
    for id in &ids {
        assert_eq!(payment_state(&client, id, &clerk).await, "settled");
    }
    let mut committed = settled_by(&audit);
    committed.sort();
    let mut expected = tasks.clone();
    expected.sort();
    assert_eq!(committed, expected, "one commit per task, by the task");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_settlement_whose_server_dies_fails_on_the_survivor_and_changes_nothing() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    let dir = scratch("replicas");
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000002")];
    let args = ["--store", redis.as_str(), "--settle-seconds", "60", "--lease-ttl", "2"];
    let ((mut a, url_a), (_b, url_b)) =
        tokio::join!(serve_payments(&dir, &args, &env), serve_payments(&dir, &args, &env));
    let (on_a, on_b) = (SessionlessClient::new(&url_a), SessionlessClient::new(&url_b));
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);

    let id = authorized_payment(&on_a, &clerk).await;
    let task = settle_as_task(&on_a, &id, &clerk).await;
    // B sees the payment held by A's task.
    let refused = on_b.call_with_headers("payment_void", json!({ "domain": "payment", "payment_id": id }), &clerk);
    let refused = refused.await.result();
    assert_eq!(
        (refused["structuredContent"]["code"].as_str(), refused["structuredContent"]["task_id"].as_str()),
        (Some("TASK_RUNNING"), Some(task.as_str())),
        "{refused}"
    );
    a.kill().await.unwrap();
    tokio::time::sleep(Duration::from_millis(6_500)).await;
    let failed = task_request(&on_b, "tasks/get", &task, &clerk).await.result();
    assert_eq!(
        (failed["status"].as_str(), failed["error"]["code"].as_i64()),
        (Some("failed"), Some(-32603)),
        "{failed}"
    );
    assert!(failed["statusMessage"].as_str().is_some_and(|m| m.contains("nothing was committed")), "{failed}");
    // Nothing was half-done, and the payment is free on the survivor.
    assert_eq!(payment_state(&on_b, &id, &clerk).await, "authorized");
    let void = on_b.call_with_headers("payment_void", json!({ "domain": "payment", "payment_id": id }), &clerk);
    assert_eq!(void.await.result()["structuredContent"]["state"], "voided");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends `signal` (`STOP`, `CONT`) to the process `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status();
    assert!(sent.is_ok_and(|status| status.success()), "kill -{signal} {pid}");
}

/// A replica paused (SIGSTOP) longer than its task's heartbeat but inside its lease (10 s),
/// while the other replica is asked about the task: the survivor fences the runner (takes
/// the payment's lease over, clears the task's mark) before it reports `failed`, so the
/// runner, resumed before its settlement ends, finds its commit refused — the report and
/// the store agree. Unpaused, the next settlement completes and the payment is settled:
/// they agree again.
#[tokio::test]
async fn a_paused_runner_never_commits_what_another_replica_reported_failed() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    let dir = scratch("paused");
    let (audit, notices) = (dir.join("audit.jsonl"), dir.join("notices.jsonl"));
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000003")];
    let (audit_arg, notices_arg) = (audit.to_str().unwrap(), notices.to_str().unwrap());
    let args =
        ["--store", redis.as_str(), "--settle-seconds", "8", "--audit-log", audit_arg, "--notices-log", notices_arg];
    let ((a, url_a), (_b, url_b)) = tokio::join!(serve_payments(&dir, &args, &env), serve_payments(&dir, &args, &env));
    let (on_a, on_b) = (SessionlessClient::new(&url_a), SessionlessClient::new(&url_b));
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);

    let id = authorized_payment(&on_a, &clerk).await;
    let task = settle_as_task(&on_a, &id, &clerk).await;
    let pid = a.id().expect("replica A runs");
    signal(pid, "STOP");
    tokio::time::sleep(Duration::from_millis(6_500)).await;
    let reported = task_request(&on_b, "tasks/get", &task, &clerk).await.result();
    signal(pid, "CONT");
    assert_eq!(reported["status"], "failed", "{reported}");
    assert!(reported["statusMessage"].as_str().is_some_and(|m| m.contains("nothing was committed")), "{reported}");
    // A resumed inside its lease; its settlement ends 8 s after it began, and tries to commit.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(payment_state(&on_b, &id, &clerk).await, "authorized", "the store contradicts the report");
    assert_eq!(task_request(&on_a, "tasks/get", &task, &clerk).await.result()["status"], "failed");
    assert!(settled_by(&audit).is_empty(), "a settlement was committed after its task was reported failed");

    // Without the pause: completed, and settled.
    let again = settle_as_task(&on_a, &id, &clerk).await;
    let done = settled(&on_b, &again, &clerk).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(payment_state(&on_b, &id, &clerk).await, "settled");
    assert_eq!(settled_by(&audit), vec![again]);
    // The customer was told of the settlement that committed, once, and of no other.
    let told = common::lines_naming(&notices, &id, Duration::from_millis(600)).await;
    assert_eq!(told, 1, "notices: {}", std::fs::read_to_string(&notices).unwrap_or_default());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A confirmed tool as a task (travel's `flight_book`, `confirm = "otp"`, which waits for
/// the airline): the call without a code is asked for one within its request and never
/// becomes a task; the confirming call, with the code from the confirmation channel,
/// becomes the task, and holds the quote until the airline answers.
#[tokio::test]
async fn a_confirmed_booking_is_confirmed_before_it_becomes_a_task() {
    let outbox = common::confirm::Outbox::new();
    let token = "traveller-task-token-0123456789";
    let args = ["--otp-outbox", outbox.path(), "--token", &format!("traveller={token}"), "--airline-seconds", "1.5"];
    let (_server, url) = spawn_http_example("travel", &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let traveller = bearer(token);
    let traveller = headers(&traveller);
    let call = |tool: &'static str, arguments: Value| client.call_with_headers(tool, arguments, &traveller);

    let switched = call("switch_domain", json!({ "domain": "flight", "reason": "the user flies" })).await.result();
    let flow = switched["structuredContent"]["flow"].as_str().unwrap_or_else(|| panic!("{switched}")).to_string();
    let search = json!({
        "domain": "flight", "origin": "Madrid", "destination": "Lisbon",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 1, "flow": flow,
    });
    let found = call("flight_search", search).await.result()["structuredContent"].clone();
    let (quote, offer) = (found["quote_id"].as_str().unwrap(), found["offers"][0]["id"].as_str().unwrap());
    let flow = found["flow"].as_str().unwrap_or(&flow).to_string();
    let book = json!({ "domain": "flight", "quote_id": quote, "offer_id": offer, "flow": flow });

    // Without a code: asked for one, in the request; no task.
    let required = call_as_task(&client, "flight_book", book.clone(), &traveller).await;
    assert!(required.get("taskId").is_none(), "{required}");
    let challenge = &required["structuredContent"];
    assert_eq!(challenge["code"], "CONFIRMATION_REQUIRED", "{required}");
    let challenge_id = challenge["challenge_id"].as_str().unwrap();
    // With it: the task.
    let mut confirming = book.clone();
    confirming["challenge_id"] = challenge_id.into();
    confirming["otp"] = outbox.code(challenge_id).into();
    let created = call_as_task(&client, "flight_book", confirming, &traveller).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().unwrap().to_string();
    // While the airline answers, the quote is held: another booking of it is refused
    // at once, naming the task, and no code is asked for it.
    let again = call("flight_book", book).await.result();
    assert_eq!(
        (again["structuredContent"]["code"].as_str(), again["structuredContent"]["task_id"].as_str()),
        (Some("TASK_RUNNING"), Some(task.as_str())),
        "{again}"
    );
    let done = settled(&client, &task, &traveller).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["structuredContent"]["state"].as_str()),
        (Some("completed"), Some("booked")),
        "{done}"
    );
}

/// Tasks are seen: counted by status as they start and end, their run timed.
#[tokio::test]
async fn tasks_are_counted_by_status_and_timed() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = free.local_addr().unwrap().to_string();
    drop(free);
    let (_server, url) = spawn_http_example("conformance", &["--metrics", &metrics], &[]).await;
    let client = SessionlessClient::new(&url);
    let done = call_as_task(&client, "slow_compute", json!({ "seconds": 1, "label": "m" }), &[]).await;
    let stopped = call_as_task(&client, "slow_compute", json!({ "seconds": 60, "label": "m" }), &[]).await;
    let stopped = stopped["taskId"].as_str().unwrap();
    task_request(&client, "tasks/cancel", stopped, &[]).await.result();
    assert_eq!(settled(&client, stopped, &[]).await["status"], "cancelled");
    assert_eq!(settled(&client, done["taskId"].as_str().unwrap(), &[]).await["status"], "completed");
    let expected = [
        r#"toolgate_tasks_total{status="working"} 2"#,
        r#"toolgate_tasks_total{status="completed"} 1"#,
        r#"toolgate_tasks_total{status="cancelled"} 1"#,
        "toolgate_task_duration_seconds_count 2",
    ];
    // A task's end is counted just after its record says so: ask again for a moment.
    let mut rendered = String::new();
    for _ in 0..20 {
        rendered = reqwest::get(format!("http://{metrics}/metrics")).await.unwrap().text().await.unwrap();
        if expected.iter().all(|line| rendered.lines().any(|l| l == *line)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("expected {expected:?} in:\n{rendered}");
}

/// Issue 56: a replica stopped (SIGTERM) while it settles a payment as a task, past its
/// shutdown grace, gives the task up: it exits 0 at once after the grace, and the other
/// replica reports the task failed and voids the payment at once — no heartbeat to lapse,
/// no lease to expire.
async fn a_task_outliving_the_grace_is_given_up_and_its_payment_freed_at_once_on(store: &str) {
    let dir = scratch("given-up");
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000001")];
    let slow = ["--store", store, "--settle-seconds", "60", "--drain-delay", "100ms", "--shutdown-grace", "1"];
    let (mut a, url_a) = serve_payments(&dir, &slow, &env).await;
    let (_b, url_b) = serve_payments(&dir, &["--store", store], &env).await;
    let (on_a, on_b) = (SessionlessClient::new(&url_a), SessionlessClient::new(&url_b));
    let clerk = bearer(CLERK);
    let clerk = headers(&clerk);
    let id = authorized_payment(&on_a, &clerk).await;
    let task = settle_as_task(&on_a, &id, &clerk).await;
    assert_eq!(task_request(&on_b, "tasks/get", &task, &clerk).await.result()["status"], "working");

    let asked = std::time::Instant::now();
    crate::shutdown::signal(&a, "TERM");
    let status = tokio::time::timeout(Duration::from_secs(10), a.wait()).await.expect("it exits").unwrap();
    let took = asked.elapsed();
    assert!(status.success(), "exited {status:?}");
    assert!(took < Duration::from_secs(5), "gave up after the 1 s grace, not the 60 s task: {took:?}");

    let freed = std::time::Instant::now();
    let failed = task_request(&on_b, "tasks/get", &task, &clerk).await.result();
    assert_eq!(
        (failed["status"].as_str(), failed["error"]["code"].as_i64()),
        (Some("failed"), Some(-32603)),
        "{failed}"
    );
    assert!(failed["statusMessage"].as_str().is_some_and(|m| m.contains("server stopped")), "{failed}");
    let void = on_b.call_with_headers("payment_void", json!({ "domain": "payment", "payment_id": id }), &clerk).await;
    let void = void.result();
    assert_eq!(void["structuredContent"]["state"], "voided", "{void}");
    let waited = freed.elapsed();
    assert!(waited < Duration::from_millis(1_000), "the payment was free at once, not after a lease: {waited:?}");
    eprintln!(
        "given up: exited 0 {} ms after SIGTERM; the other replica voided the payment in {} ms",
        took.as_millis(),
        waited.as_millis()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_task_outliving_the_grace_is_given_up_and_its_payment_freed_at_once_on_redis() {
    let Some(redis) = crate::own_redis::OwnRedis::start() else { return };
    a_task_outliving_the_grace_is_given_up_and_its_payment_freed_at_once_on(&redis.url()).await;
}

#[tokio::test]
async fn a_task_outliving_the_grace_is_given_up_and_its_payment_freed_at_once_on_postgres() {
    let Some(postgres) = crate::replicas::postgres_url() else { return };
    a_task_outliving_the_grace_is_given_up_and_its_payment_freed_at_once_on(&postgres).await;
}

//! Calls that outlive their request (the MCP Tasks extension, 2026-07-28), through the
//! conformance example's task fixtures over sessionless Streamable HTTP: a task is stored
//! before it is announced, answers `tasks/get` from the store (after a restart too),
//! belongs to its caller, and a cancelled one commits nothing.

mod common;

use std::time::Duration;

use common::raw::SessionlessClient;
use common::spawn_http_example;
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
    let args = ["--store", store.as_str()];
    let (mut first, url) = spawn_http_example("conformance", &args, &[]).await;
    let client = SessionlessClient::new(&url);
    let created = call_as_task(&client, "slow_compute", json!({ "seconds": 0, "label": "kept" }), &[]).await;
    let task = created["taskId"].as_str().unwrap().to_string();
    assert_eq!(settled(&client, &task, &[]).await["status"], "completed");
    first.kill().await.unwrap();
    let (_second, url) = spawn_http_example("conformance", &args, &[]).await;
    let again = task_request(&SessionlessClient::new(&url), "tasks/get", &task, &[]).await.result();
    assert_eq!(
        (again["status"].as_str(), again["result"]["content"][0]["text"].as_str()),
        (Some("completed"), Some("computed kept in 0 s"))
    );
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// A task that asks waits in `input_required` with its questions; `tasks/update` answers
/// them (a key it does not wait for is ignored; one answer of two leaves the other), then
/// it completes.
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
    let mut half = Value::Null;
    for _ in 0..50 {
        half = task_request(&client, "tasks/get", &task, &[]).await.result();
        if half["inputRequests"].get("name").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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

/// Two replicas share a Redis store: a task run by one is read, answered and cancelled
/// through the other, and when the one running it dies, the other reports it `failed`.
#[tokio::test]
async fn another_replica_answers_cancels_and_reports_a_dead_runner() {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    let env = [("TOOLGATE_HANDLE_KEY", "tasks-test-handle-key-000000000000001")];
    let args = ["--store", redis.as_str()];
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

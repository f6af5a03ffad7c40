//! Postgres forgets what expired (issue 53): the rows of tasks past their `ttlMs` are
//! deleted by the store's sweep, through the real server on a real Postgres
//! (`TOOLGATE_TEST_POSTGRES_URL`; `.ci/run` starts one), while a live task's row stays.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::raw::SessionlessClient;
use crate::common::spawn_http_example;
use crate::postgres_replicas::OwnDatabase;
use crate::replicas::postgres_url;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A task of `slow_compute` (no wait), as a client that opted in to tasks starts it; its id.
async fn started_task(client: &SessionlessClient, label: &str) -> String {
    let meta = json!({ "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } });
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": 0, "label": label }, "_meta": meta });
    let created = client.request("tools/call", params, &[]).await.result();
    created["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_string()
}

/// How many of `tasks` still have a row in the `toolgate` schema, removed or expired ones
/// included: what Postgres holds, not what a load shows.
async fn rows_of(url: &str, tasks: &[String]) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let keys: Vec<String> = tasks.iter().map(|task| format!("task:{task}")).collect();
    client.query_one("SELECT count(*) FROM toolgate.records WHERE key = ANY($1)", &[&keys]).await.unwrap().get(0)
}

/// Tasks kept 2 s: once past it, a replica's sweep deletes their rows (it sweeps as it
/// starts, then periodically); a task still within its time keeps its row, and is read.
#[tokio::test]
async fn expired_tasks_rows_are_deleted_and_live_ones_kept() {
    let Some(server) = postgres_url() else { return };
    let own = OwnDatabase::on(&server, "sweep").await;
    let env = [("TOOLGATE_HANDLE_KEY", "sweep-test-handle-key-0000000000000001")];
    let args = ["--store", own.url.as_str(), "--task-ttl", "2"];
    let (_first, url) = spawn_http_example("conformance", &args, &env).await;
    let client = SessionlessClient::new(&url);
    // At most 16 run at once for callers that did not authenticate: started in rounds.
    let mut expiring = Vec::new();
    for round in 0..5 {
        let started: Vec<_> = (0..10)
            .map(|n| {
                let client = SessionlessClient::new(&url);
                tokio::spawn(async move { started_task(&client, &format!("expiring {round}-{n}")).await })
            })
            .collect();
        for task in started {
            expiring.push(task.await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(rows_of(&own.url, &expiring).await, expiring.len() as i64, "every task was stored");
    tokio::time::sleep(Duration::from_millis(2_300)).await;
    let live = started_task(&client, "live").await;

    // A second replica sweeps as it starts.
    let (_second, url) = spawn_http_example("conformance", &args, &env).await;
    let mut left = rows_of(&own.url, &expiring).await;
    for _ in 0..50 {
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = rows_of(&own.url, &expiring).await;
    }
    assert_eq!(left, 0, "rows of {} tasks past their ttl are still in Postgres", expiring.len());
    assert_eq!(rows_of(&own.url, std::slice::from_ref(&live)).await, 1, "a live task's row was swept");
    let read: Value = SessionlessClient::new(&url)
        .request("tasks/get", json!({ "taskId": live, "_meta": { "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } } }), &[])
        .await
        .result();
    assert!(read["status"].is_string(), "the live task is read after the sweep: {read}");
    own.drop().await;
}

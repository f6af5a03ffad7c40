//! Postgres forgets what expired (issue 53): the rows of tasks past their `ttlMs` are
//! deleted by the store's sweep, through the real server on a real Postgres
//! (`TOOLGATE_TEST_POSTGRES_URL`; `.ci/run` starts one), while a live task's row stays.
//! And what is due, as the timers' sweep reads it: none whose lease is held (issue 57).

use std::time::Duration;

use serde_json::{Value, json};
use toolgate::store::{FlowStore, Hold, PostgresStore, Snapshot, StoreKey};

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

/// Tasks kept 3 s, on one replica: once past it, another replica's sweep deletes their
/// rows (a store sweeps as it connects, then periodically), while a task of a replica
/// that keeps them a minute keeps its row, and is read.
#[tokio::test]
async fn expired_tasks_rows_are_deleted_and_live_ones_kept() {
    let Some(server) = postgres_url() else { return };
    let own = OwnDatabase::on(&server, "sweep").await;
    let env = [("TOOLGATE_HANDLE_KEY", "sweep-test-handle-key-0000000000000001")];
    let store = ["--store", own.url.as_str()];
    let (brief, long) = ([&store[..], &["--task-ttl", "3"]].concat(), [&store[..], &["--task-ttl", "60"]].concat());
    let ((_briefly, brief_url), (_long, long_url)) =
        tokio::join!(spawn_http_example("conformance", &brief, &env), spawn_http_example("conformance", &long, &env));
    let live = started_task(&SessionlessClient::new(&long_url), "live").await;
    // At most 16 run at once for callers that did not authenticate: started in rounds.
    let mut expiring = Vec::new();
    for round in 0..5 {
        let started: Vec<_> = (0..10)
            .map(|n| {
                let client = SessionlessClient::new(&brief_url);
                tokio::spawn(async move { started_task(&client, &format!("expiring {round}-{n}")).await })
            })
            .collect();
        let mut these = Vec::new();
        for task in started {
            these.push(task.await.unwrap());
        }
        assert_eq!(rows_of(&own.url, &these).await, 10, "every task was stored");
        expiring.extend(these);
    }
    tokio::time::sleep(Duration::from_millis(3_300)).await;

    // A third replica sweeps as it starts.
    let (_third, url) = spawn_http_example("conformance", &store, &env).await;
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
    let meta = json!({ "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } });
    let read: Value =
        SessionlessClient::new(&url).request("tasks/get", json!({ "taskId": live, "_meta": meta }), &[]).await.result();
    assert!(read["status"].is_string(), "the live task is read after the sweep: {read}");
    own.drop().await;
}

/// Postgres names no due instance whose lease is held: a call or another replica's sweep
/// is settling it, and a sweep would only queue behind it. Once released, it is named.
#[tokio::test]
async fn a_due_instance_whose_lease_is_held_is_not_named_until_released() {
    let Some(server) = postgres_url() else { return };
    let own = OwnDatabase::on(&server, "due_leased").await;
    let store = PostgresStore::connect(&own.url).await.unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let (held, free) = (StoreKey::instance("quote", "Q-held"), StoreKey::instance("quote", "Q-free"));
    let due = Snapshot { due_at_ms: Some(now - 1_000), ..Snapshot::default() }.with_state("quote", "quoted");
    for key in [&held, &free] {
        store.commit(key, 0, &due, None, None).await.unwrap();
    }
    let named = |keys: Vec<StoreKey>| keys.iter().map(|k| k.as_str().to_string()).collect::<Vec<_>>();
    let both = named(store.due(now, 10).await.unwrap());
    assert_eq!(both.len(), 2, "{both:?}");
    let step = store.begin(&held, Hold::Wait).await.unwrap();
    assert_eq!(named(store.due(now, 10).await.unwrap()), [free.as_str()], "a held lease is left out");
    drop(step);
    // A dropped lease is released in the store's next batch of reads.
    let mut again = Vec::new();
    for _ in 0..50 {
        store.load(&free).await.unwrap();
        again = named(store.due(now, 10).await.unwrap());
        if again.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(again.len(), 2, "released, it is named again: {again:?}");
    drop(store);
    own.drop().await;
}

//! A handler's own SQL through its call's `Transaction`, through a real client, on the
//! SQLite file and on a real Postgres (`TOOLGATE_TEST_POSTGRES_URL`): what a call that
//! fails, panics, times out or writes bad SQL wrote is never kept; an idempotent call's
//! retry finds its first result, committed with its rows; a server on a store that keeps no
//! tables of yours refuses to start.

mod common;

use common::TestClient;
use common::clients::Lifecycle;
use serde_json::{Value, json};
use toolgate::prelude::*;
use toolgate::store::{FlowStore, MemoryStore, PostgresStore, SqliteStore};
use toolgate::{StaticTokens, Transaction};

toolgate::machine! {
    id: "acct",
    key: "acct_id",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

const TABLES: &str = "CREATE TABLE IF NOT EXISTS moves (acct TEXT NOT NULL, note TEXT NOT NULL)";

/// What a write does after its statement.
#[derive(Deserialize, JsonSchema)]
struct Write {
    /// The account.
    acct_id: String,
    /// What the row says.
    note: String,
    /// Then: `ok`, `fail`, `panic`, `sleep` (past the deadline) or `bad_sql`.
    then: String,
}

#[derive(Deserialize, JsonSchema)]
struct AcctRef {
    /// The account.
    acct_id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Payment {
    /// The account.
    acct_id: String,
    /// The client's id of this request: a retry with the same one runs once.
    request_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Written {
    note: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Count {
    moves: i64,
}

async fn insert_then(tx: &Transaction, input: &Write) -> Result<Written, ToolError> {
    tx.execute(
        "INSERT INTO moves (acct, note) VALUES ($1, $2)",
        &[input.acct_id.as_str().into(), input.note.as_str().into()],
    )
    .await?;
    match input.then.as_str() {
        "fail" => Err(ToolError::not_found("made to fail after its write")),
        "panic" => panic!("made to panic after its write"),
        "sleep" => {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            Ok(Written { note: input.note.clone() })
        }
        "bad_sql" => {
            tx.execute("INSERT INTO no_such_table VALUES ($1)", &[1_i64.into()]).await?;
            Ok(Written { note: input.note.clone() })
        }
        _ => Ok(Written { note: input.note.clone() }),
    }
}

/// Write a row on an open account, then do what `then` says. Changes no state.
#[action(domain = "acct", bind_state = "open", timeout = "300ms")]
async fn acct_write(input: Write, tx: Transaction) -> Result<Written, ToolError> {
    insert_then(&tx, &input).await
}

/// Write a row and close the account, unless `then` says otherwise.
#[action(domain = "acct", bind_state = "open", transition = "CLOSE", timeout = "300ms")]
async fn acct_close(input: Write, tx: Transaction) -> Result<Written, ToolError> {
    insert_then(&tx, &input).await
}

/// Pay once per request id: a row per payment.
#[action(domain = "acct", bind_state = "open", transactional, idempotency_key = "request_id")]
async fn acct_pay(input: Payment, tx: Transaction) -> Result<Written, ToolError> {
    let note = format!("payment {}", input.request_id);
    tx.execute(
        "INSERT INTO moves (acct, note) VALUES ($1, $2)",
        &[input.acct_id.as_str().into(), note.as_str().into()],
    )
    .await?;
    Ok(Written { note })
}

/// How many rows an account has, as committed.
#[action(domain = "acct")]
async fn acct_count(input: AcctRef, tx: Transaction) -> Result<Count, ToolError> {
    let counted: Option<Count> =
        tx.query_opt("SELECT count(*) AS moves FROM moves WHERE acct = $1", &[input.acct_id.as_str().into()]).await?;
    Ok(counted.unwrap_or(Count { moves: 0 }))
}

const TOKEN: &str = "transactions-test-token-0000000001";

async fn serve(store: impl FlowStore) -> TestClient {
    let server = Server::from_registry("transactions")
        .store(store)
        .tables(TABLES)
        .handle_key(b"transactions-test-handle-key-0000000001".to_vec())
        .authenticator(StaticTokens::new().token(TOKEN, Principal::new("payer")))
        .build()
        .expect("a server");
    let url = common::serve_in_process(server).await;
    TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await
}

fn write(acct: &str, note: &str, then: &str) -> Value {
    json!({ "domain": "acct", "acct_id": acct, "note": note, "then": then })
}

/// The account's committed rows and state.
async fn rows_and_state(client: &TestClient, acct: &str) -> (i64, String) {
    let counted = client.ok("acct_count", json!({ "domain": "acct", "acct_id": acct })).await;
    (counted["moves"].as_i64().unwrap(), counted["state"].as_str().unwrap().to_string())
}

async fn what_fails_writes_nothing(client: TestClient) {
    client.ok("acct_write", write("A-1", "first", "ok")).await;
    assert_eq!(rows_and_state(&client, "A-1").await, (1, "open".into()));
    for then in ["fail", "panic", "sleep", "bad_sql"] {
        let failed = client.refused("acct_write", write("A-1", then, then)).await;
        let detail = failed.to_string();
        assert!(!detail.contains("no_such_table") && !detail.contains("made to panic"), "{detail}");
        assert_eq!(rows_and_state(&client, "A-1").await, (1, "open".into()), "after `{then}`: {failed}");
        let refused = client.refused("acct_close", write("A-1", then, then)).await;
        assert_eq!(rows_and_state(&client, "A-1").await, (1, "open".into()), "after closing with `{then}`: {refused}");
    }
    let closed = client.ok("acct_close", write("A-1", "closing", "ok")).await;
    assert_eq!(closed["state"], "closed");
    assert_eq!(rows_and_state(&client, "A-1").await, (2, "closed".into()));
    // Refused by the gate: no handler, no row.
    let refused = client.refused("acct_write", write("A-1", "late", "ok")).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    assert_eq!(rows_and_state(&client, "A-1").await, (2, "closed".into()));

    // An idempotent call: its retry gets the first result, and its row is written once.
    let pay = json!({ "domain": "acct", "acct_id": "A-2", "request_id": "r-1" });
    let first = client.ok("acct_pay", pay.clone()).await;
    let again = client.ok("acct_pay", pay).await;
    assert_eq!(first, again);
    assert_eq!(rows_and_state(&client, "A-2").await, (1, "open".into()));
}

#[tokio::test]
async fn what_fails_writes_nothing_on_sqlite() {
    let path = std::env::temp_dir().join(format!("toolgate-transactions-{}.db", std::process::id()));
    let store = SqliteStore::open(&path).unwrap();
    what_fails_writes_nothing(serve(store).await).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The tables of yours exist as soon as the server serves, before any call writes them: a
/// report or another program that reads them first finds them (empty), not missing.
#[tokio::test]
async fn your_tables_exist_before_the_first_call() {
    let path = std::env::temp_dir().join(format!("toolgate-transactions-tables-{}.db", std::process::id()));
    let client = serve(SqliteStore::open(&path).unwrap()).await;
    // A round trip that writes nothing: the server is serving.
    assert!(!client.tools().await.is_empty());
    let reader = rusqlite::Connection::open(&path).unwrap();
    let tables: i64 =
        reader.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'moves'", [], |row| row.get(0)).unwrap();
    assert_eq!(tables, 1, "the table `moves` was not created as the server started");
    drop((reader, client));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test]
async fn what_fails_writes_nothing_on_postgres() {
    let Ok(admin) = std::env::var("TOOLGATE_TEST_POSTGRES_URL") else {
        eprintln!("SKIPPED: set TOOLGATE_TEST_POSTGRES_URL to run the Postgres transaction tests");
        return;
    };
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = format!("transactions_{}", std::process::id());
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
    let store = PostgresStore::connect(&url).await.unwrap();
    what_fails_writes_nothing(serve(store).await).await;
    let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

#[test]
fn a_store_that_keeps_no_tables_of_yours_refuses_to_start() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let problem = Server::from_registry("transactions").store(MemoryStore::new()).build().unwrap_err().to_string();
    assert!(problem.contains("`acct_write`") && problem.contains("through a `Transaction`"), "{problem}");
    assert!(problem.contains("--store postgres://"), "{problem}");
}

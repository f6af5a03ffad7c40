//! A handler runs code written for the store's own driver inside its call's transaction,
//! through a real MCP client: a function taking `&impl tokio_postgres::GenericClient` on a
//! real Postgres (`TOOLGATE_TEST_POSTGRES_URL`), a function taking `&rusqlite::Connection`
//! on the SQLite file. Its rows commit with the transition, and vanish when the handler
//! fails after calling it; on SQLite, work that fails, panics, overruns its bound or tries
//! to end the transaction fails its call only, and the model sees none of its text. The new
//! `SqlValue`s (unsigned, decimal, timestamp with offset, JSON) bind and read on both.

mod common;

use common::TestClient;
use common::clients::Lifecycle;
use serde_json::{Value, json};
use toolgate::prelude::*;
use toolgate::rusqlite;
use toolgate::store::{FlowStore, PostgresStore, SqlDecimal, SqlValue, SqliteStore};
// The test's own tokio-postgres 0.7, as an application has it (`toolgate::tokio_postgres`
// re-exports the very same crate with the feature `postgres`).
use tokio_postgres::GenericClient;
use toolgate::{StaticTokens, Transaction};

toolgate::machine! {
    id: "ledger",
    key: "ledger_id",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

// Code written for the drivers, before and without toolgate: taken as it is.

/// Adds an entry, and says how many the ledger has now (as this client sees them).
async fn pg_add_entry(db: &impl GenericClient, ledger: &str, note: &str) -> Result<i64, tokio_postgres::Error> {
    db.execute("INSERT INTO entries (ledger, note) VALUES ($1, $2)", &[&ledger, &note]).await?;
    let row = db.query_one("SELECT count(*) FROM entries WHERE ledger = $1", &[&ledger]).await?;
    Ok(row.get(0))
}

/// Adds an entry.
fn sqlite_add_entry(db: &rusqlite::Connection, ledger: &str, note: &str) -> rusqlite::Result<usize> {
    db.execute("INSERT INTO entries (ledger, note) VALUES (?1, ?2)", (ledger, note))
}

/// What a close does after the driver's code.
#[derive(Deserialize, JsonSchema)]
struct Close {
    /// The ledger.
    ledger_id: String,
    /// The entry's note.
    note: String,
    /// Then: `ok`, or `fail` (the handler fails after the driver's code); on SQLite also
    /// what the work does: `bad_sql`, `panic`, `overrun`, `commit`.
    then: String,
}

#[derive(Deserialize, JsonSchema)]
struct LedgerRef {
    /// The ledger.
    ledger_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Closed {
    /// The entries the handler's client saw (Postgres), in its transaction.
    seen: Option<i64>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Count {
    entries: i64,
}

/// Close a ledger with an entry written by tokio-postgres code, in the call's transaction.
#[action(domain = "ledger", bind_state = "open", transition = "CLOSE")]
async fn ledger_close_pg(input: Close, tx: Transaction) -> Result<Closed, ToolError> {
    let db = tx.postgres().await?;
    let seen = pg_add_entry(&*db, &input.ledger_id, &input.note).await?;
    match input.then.as_str() {
        // What the docs say not to do: the call then refuses to write its records.
        "commit" => db.batch_execute("COMMIT").await?,
        // The transaction's own statements fail while its client is lent, rather than
        // wait for a lock this handler holds.
        "execute_while_lent" => {
            tx.execute("INSERT INTO entries (ledger, note) VALUES ($1, 'late')", &[input.ledger_id.as_str().into()])
                .await?;
        }
        _ => {}
    }
    drop(db);
    match input.then.as_str() {
        "fail" => Err(ToolError::failed("MADE_TO_FAIL", "failed after its driver's code")),
        _ => Ok(Closed { seen: Some(seen) }),
    }
}

/// Close a ledger with an entry written by rusqlite code, at the call's commit.
#[action(domain = "ledger", bind_state = "open", transition = "CLOSE", timeout = "5s")]
async fn ledger_close_sqlite(input: Close, tx: Transaction) -> Result<Closed, ToolError> {
    let (ledger, note, then) = (input.ledger_id.clone(), input.note.clone(), input.then.clone());
    tx.sqlite_at_commit(move |db| {
        sqlite_add_entry(db, &ledger, &note)?;
        match then.as_str() {
            "bad_sql" => db.execute("INSERT INTO no_such_table VALUES (1)", ()).map(drop),
            "panic" => panic!("made to panic in its rusqlite work"),
            "overrun" => {
                // Never ends by itself: the bound interrupts it.
                let forever = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n";
                db.query_row(forever, (), |row| row.get::<_, i64>(0)).map(drop)
            }
            "commit" => db.execute_batch("COMMIT"),
            _ => Ok(()),
        }
    })
    .await?;
    match input.then.as_str() {
        "fail" => Err(ToolError::failed("MADE_TO_FAIL", "failed after its driver's code")),
        _ => Ok(Closed { seen: None }),
    }
}

/// How many entries a ledger has, as committed.
#[action(domain = "ledger")]
async fn ledger_count(input: LedgerRef, tx: Transaction) -> Result<Count, ToolError> {
    let counted: Option<Count> = tx
        .query_opt("SELECT count(*) AS entries FROM entries WHERE ledger = $1", &[input.ledger_id.as_str().into()])
        .await?;
    Ok(counted.unwrap_or(Count { entries: 0 }))
}

#[derive(Deserialize, JsonSchema)]
struct TypedWrite {
    /// The ledger.
    ledger_id: String,
    /// An unsigned integer to bind.
    big: u64,
    /// Write the row (else only read it).
    write: bool,
}

/// A row of `typed` as the store reads it back.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Typed {
    big: Value,
    amount: Value,
    at: Value,
    doc: Value,
}

#[derive(Serialize, JsonSchema)]
struct TypedRead {
    /// The ledger's row, as this call's queries see it.
    row: Option<Typed>,
}

/// Writes a row of the new parameter types, and reads it back.
#[action(domain = "ledger")]
async fn ledger_typed(input: TypedWrite, tx: Transaction) -> Result<TypedRead, ToolError> {
    if input.write {
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-06T19:00:00.5+01:00").unwrap();
        let amount: SqlDecimal = "-1234.50".parse().unwrap();
        let params: [SqlValue; 5] = [
            input.ledger_id.as_str().into(),
            input.big.into(),
            amount.into(),
            at.into(),
            json!({ "lines": [1, 2], "paid": false }).into(),
        ];
        tx.execute("INSERT INTO typed (ledger, big, amount, at, doc) VALUES ($1, $2, $3, $4, $5)", &params).await?;
    }
    // Postgres reads what this transaction wrote; SQLite, what is committed.
    let row = tx
        .query_opt("SELECT big, amount, at, doc FROM typed WHERE ledger = $1", &[input.ledger_id.as_str().into()])
        .await?;
    Ok(TypedRead { row })
}

fn typed(ledger: &str, big: u64, write: bool) -> Value {
    json!({ "domain": "ledger", "ledger_id": ledger, "big": big, "write": write })
}

const TOKEN: &str = "drivers-test-token-00000000000000001";

async fn serve(store: impl FlowStore, tables: &str) -> TestClient {
    let server = Server::from_registry("drivers")
        .store(store)
        .tables(tables)
        .handle_key(b"drivers-test-handle-key-0000000000001".to_vec())
        .authenticator(StaticTokens::new().token(TOKEN, Principal::new("clerk")))
        .build()
        .expect("a server");
    let url = common::serve_in_process(server).await;
    TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await
}

fn close(ledger: &str, then: &str) -> Value {
    json!({ "domain": "ledger", "ledger_id": ledger, "note": then, "then": then })
}

/// The ledger's committed entries and state.
async fn entries_and_state(client: &TestClient, ledger: &str) -> (i64, String) {
    let counted = client.ok("ledger_count", json!({ "domain": "ledger", "ledger_id": ledger })).await;
    (counted["entries"].as_i64().unwrap(), counted["state"].as_str().unwrap().to_string())
}

/// A failure the model sees names no driver's text, only `INTERNAL` and a correlation id.
fn says_nothing_of_the_driver(refused: &Value) {
    let text = refused.to_string();
    assert_eq!(refused["code"], "INTERNAL", "{text}");
    for secret in ["no_such_table", "panic", "interrupt", "COMMIT", "rusqlite", "not authorized"] {
        assert!(!text.contains(secret), "the model was shown `{secret}`: {text}");
    }
}

const SQLITE_TABLES: &str = "CREATE TABLE IF NOT EXISTS entries (ledger TEXT NOT NULL, note TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS typed (ledger TEXT, big, amount TEXT, at TEXT, doc TEXT)";

const POSTGRES_TABLES: &str = "CREATE TABLE IF NOT EXISTS entries (ledger TEXT NOT NULL, note TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS typed (ledger TEXT, big NUMERIC, amount NUMERIC(12, 2), at TIMESTAMPTZ, doc JSONB)";

fn scratch_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("toolgate-drivers-{name}-{}.db", std::process::id()))
}

fn remove_file(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[tokio::test]
async fn a_rusqlite_function_commits_with_the_transition_on_sqlite() {
    let path = scratch_file("close");
    remove_file(&path);
    let client = serve(SqliteStore::open(&path).unwrap(), SQLITE_TABLES).await;

    // Failed after its rusqlite work was queued: the entry is not written, the ledger stays open.
    let refused = client.refused("ledger_close_sqlite", close("L-1", "fail")).await;
    assert_eq!(refused["code"], "MADE_TO_FAIL", "{refused}");
    assert_eq!(entries_and_state(&client, "L-1").await, (0, "open".into()));

    // The work itself fails: bad SQL, a panic, past its bound, or ending the transaction.
    for then in ["bad_sql", "panic", "overrun", "commit"] {
        let started = std::time::Instant::now();
        let refused = client.refused("ledger_close_sqlite", close("L-1", then)).await;
        says_nothing_of_the_driver(&refused);
        assert_eq!(entries_and_state(&client, "L-1").await, (0, "open".into()), "after `{then}`");
        if then == "overrun" {
            let took = started.elapsed();
            assert!(took < std::time::Duration::from_secs(2), "the overrun was cut off after {took:?}");
            eprintln!("a call whose rusqlite work never ends is answered after {} ms", took.as_millis());
        }
    }

    // The writer commits others' calls as before.
    let closed = client.ok("ledger_close_sqlite", close("L-1", "ok")).await;
    assert_eq!(closed["state"], "closed");
    assert_eq!(entries_and_state(&client, "L-1").await, (1, "closed".into()));
    // Refused by the gate: no handler, no work, no entry.
    let refused = client.refused("ledger_close_sqlite", close("L-1", "ok")).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    assert_eq!(entries_and_state(&client, "L-1").await, (1, "closed".into()));

    // Many ledgers at once, one of them overrunning its bound in the same groups: only it fails.
    let calls = (0..12).map(|i| {
        let then = if i == 5 { "overrun" } else { "ok" };
        client.try_call("ledger_close_sqlite", close(&format!("M-{i}"), then))
    });
    let done = futures::future::join_all(calls).await;
    for (i, done) in done.into_iter().enumerate() {
        let failed = done.unwrap().is_error.unwrap_or(false);
        assert_eq!(failed, i == 5, "M-{i}");
        let expected = if i == 5 { (0, "open".to_string()) } else { (1, "closed".to_string()) };
        assert_eq!(entries_and_state(&client, &format!("M-{i}")).await, expected, "M-{i}");
    }
    drop(client);
    remove_file(&path);
}

#[tokio::test]
async fn the_new_parameter_types_bind_and_read_on_sqlite() {
    let path = scratch_file("typed");
    remove_file(&path);
    let client = serve(SqliteStore::open(&path).unwrap(), SQLITE_TABLES).await;
    // Past SQLite's INTEGER: the call fails, saying nothing of why to the model, and writes nothing.
    says_nothing_of_the_driver(&client.refused("ledger_typed", typed("T-1", u64::MAX, true)).await);
    assert_eq!(client.ok("ledger_typed", typed("T-1", 0, false)).await["row"], Value::Null);
    // SQLite's queries read what is committed: the first call commits, the second reads.
    assert_eq!(client.ok("ledger_typed", typed("T-1", 1 << 62, true)).await["row"], Value::Null);
    let read = client.ok("ledger_typed", typed("T-1", 0, false)).await["row"].clone();
    assert_eq!(read["big"], 1_u64 << 62, "{read}");
    assert_eq!(read["amount"], "-1234.50", "{read}");
    assert_eq!(read["at"], "2026-12-06 19:00:00.500+01:00", "{read}");
    let doc: Value = serde_json::from_str(read["doc"].as_str().unwrap()).unwrap();
    assert_eq!(doc, json!({ "lines": [1, 2], "paid": false }), "{read}");
    drop(client);
    remove_file(&path);
}

async fn postgres_database(name: &str) -> Option<(tokio_postgres::Client, String, String)> {
    let Ok(admin) = std::env::var("TOOLGATE_TEST_POSTGRES_URL") else {
        eprintln!("SKIPPED: set TOOLGATE_TEST_POSTGRES_URL to run the Postgres driver tests");
        return None;
    };
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = format!("drivers_{name}_{}", std::process::id());
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
    Some((client, url, name))
}

#[tokio::test]
async fn a_generic_client_function_commits_with_the_transition_on_postgres() {
    let Some((admin, url, name)) = postgres_database("close").await else { return };
    let client = serve(PostgresStore::connect(&url).await.unwrap(), POSTGRES_TABLES).await;

    // Failed after its tokio-postgres code ran (and saw its own entry): nothing is kept.
    let refused = client.refused("ledger_close_pg", close("L-1", "fail")).await;
    assert_eq!(refused["code"], "MADE_TO_FAIL", "{refused}");
    assert_eq!(entries_and_state(&client, "L-1").await, (0, "open".into()));

    let closed = client.ok("ledger_close_pg", close("L-1", "ok")).await;
    assert_eq!((closed["state"].as_str(), closed["seen"].as_i64()), (Some("closed"), Some(1)), "{closed}");
    assert_eq!(entries_and_state(&client, "L-1").await, (1, "closed".into()));
    let refused = client.refused("ledger_close_pg", close("L-1", "ok")).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    assert_eq!(entries_and_state(&client, "L-1").await, (1, "closed".into()));

    // Code that commits the call's transaction under it: the transition is not written
    // (outside any transaction), the call fails, the model is told nothing of why. (The
    // entry it committed itself stays: the docs say not to.)
    let refused = client.refused("ledger_close_pg", close("L-2", "commit")).await;
    says_nothing_of_the_driver(&refused);
    assert_eq!(entries_and_state(&client, "L-2").await, (1, "open".into()));

    let refused = client.refused("ledger_close_pg", close("L-3", "execute_while_lent")).await;
    says_nothing_of_the_driver(&refused);
    assert_eq!(entries_and_state(&client, "L-3").await, (0, "open".into()));

    // Another connection sees the entry only once the call committed it.
    let (other, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let row = other.query_one("SELECT count(*) FROM entries WHERE ledger = 'L-1'", &[]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 1);
    drop((client, other));
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

#[tokio::test]
async fn the_new_parameter_types_bind_and_read_on_postgres() {
    let Some((admin, url, name)) = postgres_database("typed").await else { return };
    let client = serve(PostgresStore::connect(&url).await.unwrap(), POSTGRES_TABLES).await;
    // In the transaction: the call reads its own row.
    let read = client.ok("ledger_typed", typed("T-1", u64::MAX, true)).await["row"].clone();
    assert_eq!(read["big"], "18446744073709551615", "{read}");
    assert_eq!(read["amount"], "-1234.50", "{read}");
    assert_eq!(read["at"], "2026-12-06T18:00:00.500Z", "{read}");
    assert_eq!(read["doc"], json!({ "lines": [1, 2], "paid": false }), "{read}");
    drop(client);
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

//! Transactional hooks (`ServerBuilder::on_entry`, `on_exit`) on a call's path, through a
//! real client on the SQLite file: a creation and a transition write the business's rows
//! in the call's commit though their handlers take no `Transaction`; a hook that fails
//! leaves neither the state nor the rows; a server with hooks on a store that keeps no
//! tables of yours does not start, naming the machine. (Time's path, with kill -9 at the
//! timer's commit on SQLite and Postgres: `tests/integration/own_tables.rs`.)

mod common;

use common::TestClient;
use common::clients::Lifecycle;
use serde_json::{Value, json};
use toolgate::Moved;
use toolgate::prelude::*;
use toolgate::store::{MemoryStore, SqliteStore};

toolgate::machine! {
    id: "leave",
    key: "leave_id",
    mint: "L-{n}",
    initial: "requested",
    states: {
        requested: { on: { GRANT: "granted", REFUSE: "refused" } },
        granted:   { type: "final" },
        refused:   { type: "final" },
    }
}

const TABLES: &str = "CREATE TABLE IF NOT EXISTS leaves (id TEXT PRIMARY KEY, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decided (id TEXT NOT NULL, was TEXT NOT NULL)";

#[derive(Deserialize, JsonSchema)]
struct Ask {
    /// Why.
    reason: String,
}

#[derive(Deserialize, JsonSchema)]
struct LeaveRef {
    /// The request, as `leave_ask` returned it.
    leave_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Leave {
    leave_id: String,
}

/// Ask for leave. Does not grant it.
#[action(domain = "leave", creates)]
async fn leave_ask(input: Ask, ctx: Ctx) -> Result<Leave, ToolError> {
    let _ = input.reason;
    Ok(Leave { leave_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Grant a request. Does not refuse it.
#[action(domain = "leave", bind_state = "requested", transition = "GRANT")]
async fn leave_grant(input: LeaveRef) -> Result<Leave, ToolError> {
    Ok(Leave { leave_id: input.leave_id })
}

/// Refuse a request. Does not grant it.
#[action(domain = "leave", bind_state = "requested", transition = "REFUSE")]
async fn leave_refuse(input: LeaveRef) -> Result<Leave, ToolError> {
    Ok(Leave { leave_id: input.leave_id })
}

/// Read a request. Changes nothing.
#[action(domain = "leave")]
async fn leave_view(input: LeaveRef) -> Result<Leave, ToolError> {
    Ok(Leave { leave_id: input.leave_id })
}

/// The row of a new request, as it is created.
async fn insert_row(tx: Transaction, moved: Moved) -> Result<(), ToolError> {
    assert_eq!((moved.from.as_deref(), moved.to.as_str()), (None, "requested"));
    tx.execute("INSERT INTO leaves (id, status) VALUES ($1, 'requested')", &[moved.instance.into()]).await?;
    Ok(())
}

/// Every decision leaves `requested`: a line in `decided`.
async fn note_decision(tx: Transaction, moved: Moved) -> Result<(), ToolError> {
    let was = moved.from.unwrap_or_default();
    tx.execute("INSERT INTO decided (id, was) VALUES ($1, $2)", &[moved.instance.into(), was.into()]).await?;
    Ok(())
}

/// The row follows a grant; a refusal's hook fails (after writing), so nothing of it stays.
async fn set_status(tx: Transaction, moved: Moved) -> Result<(), ToolError> {
    let id = moved.instance.clone();
    tx.execute("UPDATE leaves SET status = $2 WHERE id = $1", &[id.into(), moved.to.as_str().into()]).await?;
    match moved.to.as_str() {
        "refused" => Err(ToolError::internal("the refusals ledger is closed")),
        _ => Ok(()),
    }
}

fn desk() -> toolgate::ServerBuilder {
    Server::from_registry("leaves")
        .tables(TABLES)
        .on_entry("leave", "requested", insert_row)
        .on_exit("leave", "requested", note_decision)
        .on_entry("leave", "granted", set_status)
        .on_entry("leave", "refused", set_status)
}

fn leave(id: &str) -> Value {
    json!({ "domain": "leave", "leave_id": id })
}

/// The row's status and how many decisions were noted, read from the file itself.
fn rows(path: &std::path::Path, id: &str) -> (Option<String>, i64) {
    let reader = rusqlite::Connection::open(path).unwrap();
    let status = reader.query_row("SELECT status FROM leaves WHERE id = ?1", [id], |row| row.get(0)).ok();
    let decided = reader.query_row("SELECT count(*) FROM decided WHERE id = ?1", [id], |row| row.get(0)).unwrap();
    (status, decided)
}

#[tokio::test]
async fn hooks_write_the_rows_in_the_call_s_commit_or_nothing_is_kept() {
    let path = std::env::temp_dir().join(format!("toolgate-hooks-{}.db", std::process::id()));
    let server = desk().store(SqliteStore::open(&path).unwrap()).build().expect("a server");
    let url = common::serve_in_process(server).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;

    let asked = client.ok("leave_ask", json!({ "domain": "leave", "reason": "moving" })).await;
    let granted = asked["leave_id"].as_str().unwrap().to_string();
    assert_eq!(rows(&path, &granted), (Some("requested".into()), 0));
    assert_eq!(client.ok("leave_grant", leave(&granted)).await["state"], "granted");
    assert_eq!(rows(&path, &granted), (Some("granted".into()), 1));

    // A hook that fails after writing: the call fails, and neither the state nor any row
    // (the exit hook's line included) is kept.
    let asked = client.ok("leave_ask", json!({ "domain": "leave", "reason": "tired" })).await;
    let refused = asked["leave_id"].as_str().unwrap().to_string();
    let failed = client.refused("leave_refuse", leave(&refused)).await;
    assert_eq!(failed["code"], "INTERNAL", "{failed}");
    assert!(!failed.to_string().contains("ledger"), "a hook's error reached the model: {failed}");
    assert_eq!(client.ok("leave_view", leave(&refused)).await["state"], "requested");
    assert_eq!(rows(&path, &refused), (Some("requested".into()), 0));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[test]
fn a_server_with_hooks_does_not_start_on_a_store_that_keeps_no_tables_of_yours() {
    let problem = desk().store(MemoryStore::new()).build().unwrap_err().to_string();
    assert!(problem.contains("transactional hooks of machine `leave`"), "{problem}");
    let wrong = Server::from_registry("leaves").tables(TABLES).on_entry("leave", "granded", set_status);
    let problem = wrong.build().unwrap_err().to_string();
    assert!(problem.contains("on_entry(\"leave\", \"granded\", …)") && problem.contains("granted"), "{problem}");
}

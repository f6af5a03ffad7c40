//! Application state reaches handlers as `State<T>` parameters, checked at start-up.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{TestClient, serve_in_process};
use serde_json::json;
use toolgate::State;
use toolgate::prelude::*;
use toolgate::registry::StartupProblem;

toolgate::machine! {
    id: "ledger",
    key: "id",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

/// The application's own data: what a database pool would be.
#[derive(Clone, Default)]
struct Ledgers {
    balances: Arc<Mutex<HashMap<String, i64>>>,
}

/// Configuration, a second state type.
#[derive(Clone)]
struct Limits {
    max_entry: i64,
}

/// Never given to the server in the tests that build it with the others.
#[derive(Clone)]
struct Auditor;

#[derive(Deserialize, JsonSchema)]
struct Entry {
    /// The ledger.
    id: String,
    /// The amount to add.
    amount: i64,
}

#[derive(Deserialize, JsonSchema)]
struct LedgerRef {
    /// The ledger.
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Balance {
    balance: i64,
}

/// Add an entry to an open ledger.
#[action(domain = "ledger", bind_state = "open")]
async fn post(
    input: Entry,
    State(ledgers): State<Ledgers>,
    limits: State<Limits>,
    ctx: Ctx,
) -> Result<Balance, ToolError> {
    assert_eq!(ctx.instance(), Some(input.id.as_str()));
    if input.amount > limits.max_entry {
        return Err(ToolError::invalid_argument("amount", format!("must be at most {}", limits.max_entry)));
    }
    let mut balances = ledgers.balances.lock().unwrap();
    let balance = balances.entry(input.id).or_default();
    *balance += input.amount;
    Ok(Balance { balance: *balance })
}

/// Close a ledger; it reports the final balance.
#[action(domain = "ledger", bind_state = "open", transition = "CLOSE")]
async fn close(input: LedgerRef, State(ledgers): State<Ledgers>, _ctx: Ctx) -> Result<Balance, ToolError> {
    Ok(Balance { balance: ledgers.balances.lock().unwrap().get(&input.id).copied().unwrap_or_default() })
}

/// Audit the books (needs an auditor).
#[action(global, name = "audit_books")]
async fn audit(_auditor: State<Auditor>, _ctx: Ctx) -> Result<Balance, ToolError> {
    Ok(Balance { balance: 0 })
}

fn builder() -> toolgate::ServerBuilder {
    Server::from_registry("ledger").state(Ledgers::default()).state(Limits { max_entry: 100 })
}

#[tokio::test]
async fn handlers_receive_the_servers_state() {
    let ledgers = Ledgers::default();
    let server = Server::from_registry("ledger")
        .state(ledgers.clone())
        .state(Limits { max_entry: 100 })
        .state(Auditor)
        .build()
        .expect("every state is given");
    let client = TestClient::http(&serve_in_process(server).await).await;
    let post = |amount: i64| json!({ "domain": "ledger", "id": "L-1", "amount": amount });
    assert_eq!(client.ok("ledger_post", post(40)).await["balance"], 40);
    assert_eq!(client.ok("ledger_post", post(2)).await["balance"], 42);
    assert_eq!(client.refused("ledger_post", post(1000)).await["code"], "INVALID_ARGUMENT");
    // The state the handlers changed is the application's own.
    assert_eq!(ledgers.balances.lock().unwrap()["L-1"], 42);
    let closed = client.ok("ledger_close", json!({ "domain": "ledger", "id": "L-1" })).await;
    assert_eq!((closed["balance"].as_i64(), closed["state"].as_str()), (Some(42), Some("closed")));
}

#[test]
fn a_state_the_server_was_not_given_stops_it_at_start_up() {
    let error = builder().build().expect_err("Auditor is missing");
    assert_eq!(error.problems.len(), 1, "{error}");
    assert!(
        matches!(&error.problems[0], StartupProblem::MissingState { tool, type_name, .. }
            if tool == "audit_books" && type_name.ends_with("Auditor")),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("tests/app_state.rs:"), "{text}");
    assert!(text.contains("add `.state(value)`"), "{text}");
}

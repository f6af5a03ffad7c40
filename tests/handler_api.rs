//! The handler API through rmcp's client: application state as `State<T>` parameters
//! (checked at start-up), and a context that reports progress, logs to the client at the
//! level it asked for, and is cancelled with the call, committing nothing.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::raw::{RawSession, Reply, SessionlessClient};
use common::{PATIENCE, TestClient, serve_in_process};
use serde_json::json;
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
async fn close(input: LedgerRef, State(ledgers): State<Ledgers>) -> Result<Balance, ToolError> {
    Ok(Balance { balance: ledgers.balances.lock().unwrap().get(&input.id).copied().unwrap_or_default() })
}

/// Audit the books (needs an auditor).
#[action(global, name = "audit_books")]
async fn audit(_auditor: State<Auditor>) -> Result<Balance, ToolError> {
    Ok(Balance { balance: 0 })
}

/// Report on a ledger: progress in three steps, then log lines at three levels.
#[action(domain = "ledger")]
async fn report(input: LedgerRef, State(ledgers): State<Ledgers>, ctx: Ctx) -> Result<Balance, ToolError> {
    for step in 1..=3 {
        ctx.progress(Progress::new(f64::from(step)).total(3.0).message(format!("step {step} of 3"))).await;
    }
    ctx.log(LogLevel::Debug, "summing entries").await;
    ctx.log(LogLevel::Info, "report ready").await;
    ctx.log(LogLevel::Warning, "ledger is large").await;
    Ok(Balance { balance: ledgers.balances.lock().unwrap().get(&input.id).copied().unwrap_or_default() })
}

/// Audit one ledger: at most 2 calls a second per ledger.
#[action(domain = "ledger", rate_limit = "2/second per instance")]
async fn inspect(input: LedgerRef) -> Result<Balance, ToolError> {
    Ok(Balance { balance: input.id.len() as i64 })
}

/// Annotate a ledger; unknown fields are ignored (the action opts out of refusing them).
#[action(domain = "ledger", allow_unknown_fields)]
async fn annotate(input: LedgerRef) -> Result<Balance, ToolError> {
    Ok(Balance { balance: input.id.len() as i64 })
}

/// Set when the slow closing handler has started, and when its future is dropped.
static SLOW_CLOSE_STARTED: AtomicBool = AtomicBool::new(false);
static SLOW_CLOSE_DROPPED: AtomicBool = AtomicBool::new(false);

struct SetOnDrop(&'static AtomicBool);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Close a ledger slowly: the first call waits until it is cancelled.
#[action(domain = "ledger", bind_state = "open", transition = "CLOSE")]
async fn close_slowly(_input: LedgerRef) -> Result<Balance, ToolError> {
    if !SLOW_CLOSE_STARTED.swap(true, Ordering::SeqCst) {
        let _dropped = SetOnDrop(&SLOW_CLOSE_DROPPED);
        std::future::pending::<()>().await;
    }
    Ok(Balance { balance: 0 })
}

/// Set when the held call has started; the test lets it go through `HOLD`.
static HOLD_STARTED: AtomicBool = AtomicBool::new(false);
static HOLD: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Look at a ledger, taking as long as the test says.
#[action(domain = "ledger")]
async fn hold(input: LedgerRef) -> Result<Balance, ToolError> {
    HOLD_STARTED.store(true, Ordering::SeqCst);
    HOLD.notified().await;
    Ok(Balance { balance: input.id.len() as i64 })
}

#[derive(Serialize, JsonSchema)]
struct ServedBy {
    /// The server `Ctx::server` gave, as it prints itself.
    server: Option<String>,
    /// Whether the call has rmcp's peer (`RmcpPeer::rmcp_peer`).
    rmcp_peer: bool,
}

/// Say which server runs this call.
#[action(global)]
async fn served_by(ctx: Ctx) -> Result<ServedBy, ToolError> {
    use toolgate::server::RmcpPeer;
    Ok(ServedBy { server: ctx.server().map(|server| format!("{server:?}")), rmcp_peer: ctx.rmcp_peer().is_some() })
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
    let refused = client.refused("ledger_post", post(1000)).await;
    // The handler named the field `amount`; the model reads the one spelling every error
    // uses, a JSON pointer.
    assert_eq!(
        (refused["code"].as_str(), refused["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/amount")),
        "{refused}"
    );
    // The state the handlers changed is the application's own.
    assert_eq!(ledgers.balances.lock().unwrap()["L-1"], 42);
    let closed = client.ok("ledger_close", json!({ "domain": "ledger", "id": "L-1" })).await;
    assert_eq!((closed["balance"].as_i64(), closed["state"].as_str()), (Some(42), Some("closed")));
}

#[test]
fn a_state_the_server_was_not_given_stops_it_at_start_up() {
    // (`builder()` gives every state but `Auditor`.)
    let error = builder().build().expect_err("Auditor is missing");
    assert_eq!(error.problems.len(), 1, "{error}");
    assert!(
        matches!(&error.problems[0], StartupProblem::MissingState { tool, type_name, .. }
            if tool == "audit_books" && type_name.ends_with("Auditor")),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("tests/handler_api.rs:"), "{text}");
    assert!(text.contains("add `.state(value)`"), "{text}");
}

/// A handler's `Ctx::server` is the server running the call, when two run in one process.
#[tokio::test]
async fn a_handler_reaches_the_server_running_it() {
    let mut names = Vec::new();
    for name in ["ledger-east", "ledger-west"] {
        let server = Server::from_registry(name)
            .state(Ledgers::default())
            .state(Limits { max_entry: 100 })
            .state(Auditor)
            .build()
            .expect("every state is given");
        let client = TestClient::http(&serve_in_process(server).await).await;
        names.push((name, client.ok("served_by", json!({})).await["server"].as_str().map(String::from)));
    }
    for (name, served_by) in names {
        let served_by = served_by.expect("the handler reached its server");
        assert!(served_by.starts_with(&format!("Server {{ name: \"{name}\"")), "{name}: {served_by}");
    }
}

/// A handler reaches rmcp's peer where rmcp serves its call (a session over rmcp's
/// client), and gets `None` where toolgate's owned path serves it (a sessionless
/// 2026-07-28 call), which builds no rmcp service.
#[tokio::test]
async fn a_handler_reaches_rmcps_peer_only_where_rmcp_serves_the_call() {
    let server = builder().state(Auditor).build().expect("every state is given");
    let url = serve_in_process(server).await;
    let by_rmcp = TestClient::http(&url).await.ok("served_by", json!({})).await;
    assert_eq!(by_rmcp["rmcp_peer"], true, "{by_rmcp}");
    let owned = SessionlessClient::new(&url).ok("served_by", json!({})).await;
    assert_eq!(owned["rmcp_peer"], false, "{owned}");
    assert!(owned["server"].as_str().is_some_and(|s| s.starts_with("Server { name: \"ledger\"")), "{owned}");
}

async fn full_server() -> TestClient {
    let server = builder().state(Auditor).build().expect("every state is given");
    TestClient::http(&serve_in_process(server).await).await
}

async fn until(what: &str, condition: impl Fn() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test]
#[allow(deprecated)] // logging is deprecated by SEP-2577; toolgate still serves it
async fn handlers_report_progress_and_log_at_the_clients_level() {
    let client = full_server().await;
    let observer = client.service.service().clone();
    client.ok("ledger_report", json!({ "domain": "ledger", "id": "L-9" })).await;

    // Progress rides the call's own response stream: it is here when the result is.
    let progress = observer.progress.lock().unwrap().clone();
    let steps: Vec<(f64, Option<String>)> = progress.iter().map(|(_, p, m)| (*p, m.clone())).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0].map(|p| (p, Some(format!("step {p} of 3")))).to_vec());
    assert!(progress.windows(2).all(|w| w[0].0 == w[1].0), "one token for the call: {progress:?}");

    // Default level: Info. Log lines travel on the session's stream, in order.
    until("the warning was not logged", || observer.logs.lock().unwrap().len() >= 2).await;
    let levels: Vec<String> = observer.logs.lock().unwrap().iter().map(|(level, _)| level.clone()).collect();
    assert_eq!(levels, ["info", "warning"], "debug is below the default level");

    let level = rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Warning);
    client.service.peer().set_level(level).await.expect("logging/setLevel");
    observer.logs.lock().unwrap().clear();
    client.ok("ledger_report", json!({ "domain": "ledger", "id": "L-9" })).await;
    until("the second warning was not logged", || !observer.logs.lock().unwrap().is_empty()).await;
    let logs = observer.logs.lock().unwrap().clone();
    assert_eq!(logs, [("warning".to_string(), json!("ledger is large"))], "info is below the level the client set");
}

#[tokio::test]
async fn a_cancelled_call_is_dropped_and_commits_nothing() {
    let client = Arc::new(full_server().await);
    let slow = json!({ "domain": "ledger", "id": "L-5" });
    let call = {
        let (client, slow) = (client.clone(), slow.clone());
        tokio::spawn(async move { client.call("ledger_close_slowly", slow).await })
    };
    until("the slow handler never started", || SLOW_CLOSE_STARTED.load(Ordering::SeqCst)).await;
    // Dropping rmcp's call future sends notifications/cancelled.
    call.abort();
    until("the cancelled handler was not dropped", || SLOW_CLOSE_DROPPED.load(Ordering::SeqCst)).await;

    // Nothing was committed: the ledger is still open, and its lease is free.
    let post = json!({ "domain": "ledger", "id": "L-5", "amount": 1 });
    assert_eq!(client.ok("ledger_post", post).await["state"], "open");
    assert_eq!(client.ok("ledger_close_slowly", slow).await["state"], "closed");
}

#[tokio::test]
async fn unknown_fields_are_refused_unless_the_action_allows_them() {
    let client = full_server().await;
    let refused = client.refused("ledger_report", json!({ "domain": "ledger", "id": "L-1", "colour": "red" })).await;
    assert_eq!(
        (refused["code"].as_str(), refused["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/colour"))
    );
    client.ok("ledger_annotate", json!({ "domain": "ledger", "id": "L-1", "colour": "red" })).await;
}

#[tokio::test]
async fn a_declared_rate_limit_refuses_and_says_when_to_come_back() {
    let client = full_server().await;
    let ledger = |id: &str| json!({ "domain": "ledger", "id": id });
    let tools = client.service.peer().list_all_tools().await.unwrap();
    let inspect = tools.iter().find(|t| t.name == "ledger_inspect").unwrap();
    let description = inspect.description.as_deref().unwrap();
    assert!(description.contains("At most 2 calls a second per `id`"), "{description}");

    client.ok("ledger_inspect", ledger("L-7")).await;
    client.ok("ledger_inspect", ledger("L-7")).await;
    let limited = client.refused("ledger_inspect", ledger("L-7")).await;
    assert_eq!(
        (limited["code"].as_str(), limited["limit"].as_str()),
        (Some("RATE_LIMITED"), Some("2/second per instance"))
    );
    let wait = limited["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 1000, "{limited}");
    // Per ledger: another one is not held up. (That the wait is exact, and the call
    // admitted after it, the limiter's own tests show in paused time.)
    client.ok("ledger_inspect", ledger("L-8")).await;
}

/// Over stateful HTTP, what a call causes rides that call's own response stream, ahead of
/// its result: a session that never opens the standalone GET stream still gets the
/// handler's log lines and the `list_changed` of a transition.
#[tokio::test]
async fn messages_a_call_causes_ride_its_own_stream() {
    let server = builder().state(Auditor).build().expect("every state is given");
    let session = RawSession::open(&serve_in_process(server).await).await;
    let methods = |reply: &Reply| -> Vec<String> {
        reply.before.iter().filter_map(|m| m["method"].as_str().map(str::to_string)).collect()
    };

    let report = session
        .request("tools/call", json!({ "name": "ledger_report", "arguments": { "domain": "ledger", "id": "L-31" } }))
        .await;
    assert!(report.is_sse(), "{report:?}");
    let logged: Vec<&str> = report.before.iter().filter_map(|m| m["params"]["data"].as_str()).collect();
    assert_eq!(logged, ["report ready", "ledger is large"], "Info and above, before the result: {:?}", report.before);
    assert!(report.message.is_ok());

    // The first call on an instance focuses the session on it (its listing changes), so
    // post once, then close: the transition's list_changed comes before the result.
    let post = json!({ "name": "ledger_post", "arguments": { "domain": "ledger", "id": "L-31", "amount": 1 } });
    session.request("tools/call", post).await;
    let close = session
        .request("tools/call", json!({ "name": "ledger_close", "arguments": { "domain": "ledger", "id": "L-31" } }))
        .await;
    assert_eq!(close.message.as_ref().unwrap()["structuredContent"]["state"], "closed", "{close:?}");
    assert_eq!(methods(&close), ["notifications/tools/list_changed"]);
}

/// A call's own stream belongs to its session: a sessionless request that names that
/// session in `Mcp-Session-Id` and reuses the call's request id writes nothing into it.
#[tokio::test]
async fn another_request_cannot_write_into_a_sessions_call_stream() {
    let url = serve_in_process(builder().state(Auditor).build().expect("every state is given")).await;
    let session = Arc::new(RawSession::open(&url).await);
    let held = {
        let session = session.clone();
        // The session's first request after `initialize` (id 1): id 2.
        let arguments = json!({ "domain": "ledger", "id": "L-41" });
        tokio::spawn(async move {
            session.request("tools/call", json!({ "name": "ledger_hold", "arguments": arguments })).await
        })
    };
    until("the held call started", || HOLD_STARTED.load(Ordering::SeqCst)).await;

    let other = SessionlessClient::new(&url);
    other.request("tools/list", json!({}), &[]).await; // id 1, so the next is id 2 too
    let report = json!({ "domain": "ledger", "id": "L-42" });
    let reply = other.call_with_headers("ledger_report", report, &[("Mcp-Session-Id", session.session_id())]).await;
    assert!(reply.message.is_ok(), "{reply:?}");

    HOLD.notify_one();
    let held = held.await.expect("the held call");
    assert!(held.message.is_ok(), "{held:?}");
    assert!(held.before.is_empty(), "another request's messages reached this call's stream: {:?}", held.before);
}

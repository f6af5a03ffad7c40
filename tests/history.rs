//! Per-instance history: every transition of a keyed instance is kept with who fired it,
//! when, with which tool and event, and the reason its handler noted — so a model that is
//! refused `invoice_pay` on INV-7 can ask `invoice_history` why ("`dave` called
//! `invoice_reject` … : amount mismatch") instead of guessing. Handlers read the same
//! history with `ctx.history()`. It respects tenants (another tenant reads an empty history,
//! as for an id nobody moved) and scopes (who may see a tool of the machine may see its
//! history), keeps what the retention allows, and a failed call leaves nothing in it.

mod common;

use common::clients::Lifecycle;
use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;
use toolgate::registry::StartupProblem;
use toolgate::store::HistoryRetention;

toolgate::machine! {
    id: "invoice",
    key: "id",
    scope: tenant,
    initial: "draft",
    states: {
        draft:    { on: { SUBMIT: "review" } },
        review:   { on: { APPROVE: "approved", REJECT: "draft" } },
        approved: { on: { PAY: "paid", REJECT: "draft" } },
        paid:     { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct InvoiceRef {
    /// The invoice, `INV-` and a number.
    #[schemars(pattern(r"^INV-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Rejection {
    /// The invoice, `INV-` and a number.
    #[schemars(pattern(r"^INV-[1-9][0-9]*$"))]
    id: String,
    /// Why it is rejected, in a few words.
    reason: String,
}

#[derive(Serialize, JsonSchema)]
struct Invoice {
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct InvoiceView {
    id: String,
    /// The history's one-line summaries, oldest first, as `ctx.history()` gives them.
    transitions: Vec<String>,
    /// Who fired each transition.
    principals: Vec<Option<String>>,
}

/// View an invoice of your tenant, with its history. Does not change it.
#[action(domain = "invoice", scope = "invoice:read")]
async fn invoice_view(input: InvoiceRef, ctx: Ctx) -> Result<InvoiceView, ToolError> {
    let history = ctx.history().await?;
    Ok(InvoiceView {
        id: input.id,
        transitions: history.iter().map(|entry| entry.summary()).collect(),
        principals: history.into_iter().map(|entry| entry.principal).collect(),
    })
}

/// Submit a draft invoice for review. Does not approve it.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT", scope = "invoice:write")]
async fn invoice_submit(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id })
}

/// Approve an invoice under review. Does not pay it.
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE", scope = "invoice:approve")]
async fn invoice_approve(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id })
}

/// Reject an invoice under review or approved, back to draft, with the reason. Does not delete it.
#[action(
    domain = "invoice",
    bind_state = ["review", "approved"],
    transition = "REJECT",
    scope = "invoice:audit"
)]
async fn invoice_reject(input: Rejection, ctx: Ctx) -> Result<Invoice, ToolError> {
    let reason = input.reason.trim();
    if reason.is_empty() {
        // A note of a call that fails goes with it: nothing is committed.
        ctx.note("rejected without a reason");
        return Err(ToolError::failed("REASON_REQUIRED", "say why the invoice is rejected"));
    }
    ctx.note(reason);
    Ok(Invoice { id: input.id })
}

/// Pay an approved invoice. Does not refund it.
#[action(domain = "invoice", bind_state = "approved", transition = "PAY", scope = "invoice:pay")]
async fn invoice_pay(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id })
}

const ALICE: &str = "alice-of-a-0123456789";
const CAROL: &str = "carol-of-a-0123456789";
const DAVE: &str = "dave-of-a-0123456789";
const FRANK: &str = "frank-of-a-0123456789";
const EVE: &str = "eve-of-a-0123456789";
const BOB: &str = "bob-of-b-0123456789";

fn tokens() -> StaticTokens {
    let principal = |subject: &str, tenant: &str, scopes: &[&str]| {
        Principal::new(subject).with_tenant(tenant).with_scopes(scopes.iter().copied())
    };
    StaticTokens::new()
        .token(ALICE, principal("alice", "a", &["invoice:read", "invoice:write"]))
        .token(CAROL, principal("carol", "a", &["invoice:read", "invoice:approve"]))
        .token(DAVE, principal("dave", "a", &["invoice:read", "invoice:audit"]))
        // Frank may pay and do nothing else: that is a tool of the machine.
        .token(FRANK, principal("frank", "a", &["invoice:pay"]))
        // Eve may see no tool of the machine.
        .token(EVE, principal("eve", "a", &[]))
        .token(BOB, principal("bob", "b", &["invoice:read", "invoice:write", "invoice:approve", "invoice:audit"]))
}

async fn server(retention: Option<HistoryRetention>) -> String {
    let mut builder = Server::from_registry("invoices").authenticator(tokens()).history_tool("invoice");
    if let Some(retention) = retention {
        builder = builder.history_retention(retention);
    }
    serve_in_process(builder.build().expect("server")).await
}

/// Two replicas sharing the Redis of `TOOLGATE_TEST_REDIS_URL` (`.ci/run` starts one);
/// `None`, saying so, without it.
async fn replicas_on_redis() -> Option<(String, String)> {
    let Some(redis) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!(
            "SKIPPED: the Redis history test needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)"
        );
        return None;
    };
    let mut urls = Vec::new();
    for _ in 0..2 {
        let store = toolgate::store::RedisStore::connect(&redis).await.expect("connect to the test Redis");
        let builder = Server::from_registry("invoices").authenticator(tokens()).history_tool("invoice");
        let server = builder.store(store).handle_key(b"history-test-handle-key-0000000000001".to_vec());
        urls.push(serve_in_process(server.build().expect("server")).await);
    }
    Some((urls.remove(0), urls.remove(0)))
}

async fn client(url: &str, token: &str) -> TestClient {
    TestClient::http_as(url, Lifecycle::Sessionless, Some(token)).await
}

fn invoice(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

fn rejection(id: &str, reason: &str) -> Value {
    json!({ "domain": "invoice", "id": id, "reason": reason })
}

/// The entries of a history result, each as `(principal, from, to, event, tool, note)`.
fn entries(history: &Value) -> Vec<(String, String, String, String, String, Option<String>)> {
    let text = |entry: &Value, field: &str| entry[field].as_str().unwrap_or_default().to_string();
    history["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| {
            (
                text(entry, "principal"),
                text(entry, "from"),
                text(entry, "to"),
                text(entry, "event"),
                text(entry, "tool"),
                entry["note"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn row(principal: &str, from: &str, to: &str, event: &str, tool: &str, note: Option<&str>) -> Row {
    (principal.into(), from.into(), to.into(), event.into(), tool.into(), note.map(str::to_string))
}

type Row = (String, String, String, String, String, Option<String>);

#[tokio::test]
async fn inv_7_reads_back_in_order_and_another_tenant_gets_nothing() {
    let url = server(None).await;
    let (alice, carol, dave, bob) =
        (client(&url, ALICE).await, client(&url, CAROL).await, client(&url, DAVE).await, client(&url, BOB).await);

    alice.ok("invoice_submit", invoice("INV-7")).await;
    carol.ok("invoice_approve", invoice("INV-7")).await;
    let rejected = dave.ok("invoice_reject", rejection("INV-7", "amount mismatch")).await;
    assert_eq!(rejected["state"], "draft");

    // Frank may not pay INV-7 now, and is pointed at the history, which says why.
    let frank = client(&url, FRANK).await;
    let refused = frank.refused("invoice_pay", invoice("INV-7")).await;
    assert_eq!((refused["code"].as_str(), refused["current_state"].as_str()), (Some("FORBIDDEN"), Some("draft")));
    assert_eq!(refused["allowed_tools"], json!(["invoice_history"]), "{refused}");
    let history = alice.ok("invoice_history", invoice("INV-7")).await;
    assert_eq!(
        entries(&history),
        [
            row("alice", "draft", "review", "SUBMIT", "invoice_submit", None),
            row("carol", "review", "approved", "APPROVE", "invoice_approve", None),
            row("dave", "approved", "draft", "REJECT", "invoice_reject", Some("amount mismatch")),
        ]
    );
    assert_eq!((history["id"].as_str(), history["state"].as_str()), (Some("INV-7"), Some("draft")));
    assert_eq!(history["domain"], "invoice");
    let listed = history["entries"].as_array().unwrap();
    let summary = listed[2]["summary"].as_str().unwrap();
    assert!(
        summary.contains("`dave` called `invoice_reject` (REJECT), from `approved` to `draft`: amount mismatch"),
        "{summary}"
    );
    // Times are RFC 3339 UTC, in commit order; each call has its own id.
    let times: Vec<&str> = listed.iter().map(|e| e["time"].as_str().unwrap()).collect();
    assert!(times.iter().all(|t| t.ends_with('Z') && t.len() == "2026-05-01T10:02:11.042Z".len()), "{times:?}");
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
    let mut call_ids: Vec<&str> = listed.iter().map(|e| e["call_id"].as_str().unwrap()).collect();
    call_ids.sort();
    call_ids.dedup();
    assert_eq!(call_ids.len(), 3, "a fresh call id per call");
    assert!(listed.iter().all(|e| e["tenant"] == "a"));

    // A handler reads the same history through `ctx.history()`.
    let viewed = carol.ok("invoice_view", invoice("INV-7")).await;
    let summaries: Vec<&Value> = listed.iter().map(|e| &e["summary"]).collect();
    assert_eq!(viewed["transitions"].as_array().unwrap().iter().collect::<Vec<_>>(), summaries);
    assert_eq!(viewed["principals"], json!(["alice", "carol", "dave"]));

    // Bob, of another tenant, reads an empty history for INV-7: his INV-7 is another
    // invoice, which never moved — and he cannot tell it from an id nobody has.
    let foreign = bob.ok("invoice_history", invoice("INV-7")).await;
    assert_eq!((foreign["entries"].clone(), foreign["state"].clone()), (json!([]), json!("draft")));
    let nobody = bob.ok("invoice_history", invoice("INV-70")).await;
    let without_id = |mut v: Value| {
        v.as_object_mut().unwrap().remove("id");
        v
    };
    assert_eq!(without_id(foreign), without_id(nobody));
    assert_eq!(bob.ok("invoice_view", invoice("INV-7")).await["transitions"], json!([]));
    // Bob's own INV-7 gets a history of its own; Alice's is untouched by it.
    bob.ok("invoice_submit", invoice("INV-7")).await;
    assert_eq!(entries(&bob.ok("invoice_history", invoice("INV-7")).await).len(), 1);
    assert_eq!(entries(&alice.ok("invoice_history", invoice("INV-7")).await).len(), 3);
}

/// With replicas on Redis, what one commits the other reads back, in order.
#[tokio::test]
async fn replicas_sharing_redis_share_the_history() {
    let Some((url_a, url_b)) = replicas_on_redis().await else { return };
    // An invoice no earlier run used: the test Redis outlives a run.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let id = format!("INV-{}", 1 + nanos % 999_999_999_999);
    client(&url_a, ALICE).await.ok("invoice_submit", invoice(&id)).await;
    client(&url_b, CAROL).await.ok("invoice_approve", invoice(&id)).await;
    client(&url_a, DAVE).await.ok("invoice_reject", rejection(&id, "amount mismatch")).await;
    let history = client(&url_b, ALICE).await.ok("invoice_history", invoice(&id)).await;
    assert_eq!(
        entries(&history),
        [
            row("alice", "draft", "review", "SUBMIT", "invoice_submit", None),
            row("carol", "review", "approved", "APPROVE", "invoice_approve", None),
            row("dave", "approved", "draft", "REJECT", "invoice_reject", Some("amount mismatch")),
        ]
    );
    assert_eq!(client(&url_a, BOB).await.ok("invoice_history", invoice(&id)).await["entries"], json!([]));
}

#[tokio::test]
async fn a_failed_call_leaves_no_entry() {
    let url = server(None).await;
    let (alice, carol, dave) = (client(&url, ALICE).await, client(&url, CAROL).await, client(&url, DAVE).await);
    alice.ok("invoice_submit", invoice("INV-9")).await;

    // The handler noted, then failed: no transition, no entry, and its note is dropped.
    let failed = dave.refused("invoice_reject", rejection("INV-9", "  ")).await;
    assert_eq!(failed["code"], "REASON_REQUIRED");
    let history = alice.ok("invoice_history", invoice("INV-9")).await;
    assert_eq!(entries(&history), [row("alice", "draft", "review", "SUBMIT", "invoice_submit", None)]);
    assert_eq!(history["state"], "review");

    // A refused call (the state gate) leaves none either.
    alice.refused("invoice_submit", invoice("INV-9")).await;
    // The next transition carries no leftover note.
    carol.ok("invoice_approve", invoice("INV-9")).await;
    let history = alice.ok("invoice_history", invoice("INV-9")).await;
    assert_eq!(
        entries(&history),
        [
            row("alice", "draft", "review", "SUBMIT", "invoice_submit", None),
            row("carol", "review", "approved", "APPROVE", "invoice_approve", None),
        ]
    );
}

#[tokio::test]
async fn retention_trims_old_entries() {
    let url = server(Some(HistoryRetention::last(2))).await;
    let (alice, carol) = (client(&url, ALICE).await, client(&url, CAROL).await);
    // Over a session too, the handler's note reaches its transition's entry.
    let dave = TestClient::http_as(&url, Lifecycle::Session, Some(DAVE)).await;
    alice.ok("invoice_submit", invoice("INV-3")).await;
    carol.ok("invoice_approve", invoice("INV-3")).await;
    dave.ok("invoice_reject", rejection("INV-3", "wrong payee")).await;
    alice.ok("invoice_submit", invoice("INV-3")).await;
    let history = carol.ok("invoice_history", invoice("INV-3")).await;
    assert_eq!(
        entries(&history),
        [
            row("dave", "approved", "draft", "REJECT", "invoice_reject", Some("wrong payee")),
            row("alice", "draft", "review", "SUBMIT", "invoice_submit", None),
        ],
        "the last 2 of 4"
    );
    let tools = alice.tools().await;
    let tool = tools.iter().find(|t| t.name == "invoice_history").expect("listed");
    let description = tool.description.as_deref().unwrap_or_default();
    assert!(description.contains("keeps the last 2 transitions"), "{description}");
}

#[tokio::test]
async fn who_may_see_a_tool_of_the_machine_may_see_its_history() {
    let url = server(None).await;
    let (alice, frank, eve) = (client(&url, ALICE).await, client(&url, FRANK).await, client(&url, EVE).await);
    alice.ok("invoice_submit", invoice("INV-5")).await;
    assert!(alice.tool_names().await.contains(&"invoice_history".to_string()));
    // Frank holds only `invoice:pay`, the scope of one tool of the machine.
    assert!(frank.tool_names().await.contains(&"invoice_history".to_string()));
    assert_eq!(entries(&frank.ok("invoice_history", invoice("INV-5")).await).len(), 1);
    // Eve may see no tool of the machine: she neither sees nor calls its history.
    assert!(!eve.tool_names().await.contains(&"invoice_history".to_string()));
    let refused = eve.refused("invoice_history", invoice("INV-5")).await;
    assert_eq!(refused["code"], "INSUFFICIENT_SCOPE", "{refused}");
    let anonymous = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    assert_eq!(anonymous.refused("invoice_history", invoice("INV-5")).await["code"], "UNAUTHENTICATED");
}

#[tokio::test]
async fn the_history_tool_takes_the_key_as_the_machine_s_tools_do() {
    let url = server(None).await;
    let alice = client(&url, ALICE).await;
    let tools = alice.tools().await;
    let history = tools.iter().find(|t| t.name == "invoice_history").expect("listed");
    let view = tools.iter().find(|t| t.name == "invoice_view").expect("listed");
    assert_eq!(history.input_schema["properties"]["id"], view.input_schema["properties"]["id"]);
    assert_eq!(history.input_schema["required"], json!(["domain", "id"]));
    let output = history.output_schema.as_ref().expect("an output schema");
    let success = &output["anyOf"][0];
    assert_eq!(success["required"], json!(["domain", "id", "entries", "state"]), "{success}");
    assert!(history.description.as_deref().unwrap_or_default().contains("Does not change anything"));

    // A malformed key is refused on its field before any state is read.
    let refused = alice.refused("invoice_history", invoice("inv-7")).await;
    assert_eq!(
        (refused["code"].as_str(), refused["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/id"))
    );
    // So is an argument it does not take.
    let extra = json!({ "domain": "invoice", "id": "INV-7", "since": "yesterday" });
    assert_eq!(alice.refused("invoice_history", extra).await["code"], "INVALID_ARGUMENT");
}

#[test]
fn a_history_tool_needs_a_keyed_machine_that_exists() {
    let error = Server::from_registry("invoices").authenticator(tokens()).history_tool("receipt").build().unwrap_err();
    assert!(
        error.problems.iter().any(|p| matches!(p, StartupProblem::HistoryTool { machine, .. } if machine == "receipt")),
        "{error}"
    );
    assert!(error.to_string().contains("the history tool of machine `receipt`: there is no such machine"), "{error}");
}

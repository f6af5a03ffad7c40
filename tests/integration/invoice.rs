//! The invoice example through rmcp's client, over stdio and over Streamable HTTP: each
//! invoice has its own workflow, shared by every session; tools appear and disappear with
//! the state of the invoice a session works on, and the call path enforces the same rule
//! on the invoice each call names.

use crate::common::TestClient;
use crate::common::clients::Lifecycle;
use serde_json::{Value, json};

fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

/// The quickstart's clerk over HTTP (`--token clerk=s3cret-clerk-token`), who holds every
/// scope, `invoices:amend` included, as the person at the terminal does over stdio.
const CLERK: &str = "clerk=s3cret-clerk-token";
const CLERK_TOKEN: &str = "s3cret-clerk-token";

/// The invoice example over HTTP, and a session of the clerk's with it.
async fn http_clerk() -> TestClient {
    TestClient::http_example_with("invoice", &["--token", CLERK], Some(CLERK_TOKEN)).await
}

/// The whole workflow as a model would see it; every step asserts what the client sees.
async fn walk_the_invoice_workflow(mut client: TestClient) {
    // Draft: discharge is not even listed; submit shows its compact description.
    let tools = client.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["invoice_amend", "invoice_submit", "invoice_view"]);
    let submit = tools.iter().find(|t| t.name == "invoice_submit").unwrap();
    assert_eq!(submit.description.as_deref(), Some("Submit an invoice for review"));
    assert!(submit.output_schema.as_ref().unwrap()["anyOf"][0]["properties"]["state"].is_object());

    // Calling it anyway: FORBIDDEN, with what is allowed and what unlocks it.
    let refused = client.refused("invoice_discharge", inv("INV-7")).await;
    assert_eq!(refused["code"], "FORBIDDEN");
    assert_eq!(refused["tool"], "invoice_discharge");
    assert_eq!(refused["machine"], "invoice");
    assert_eq!(refused["current_state"], "draft");
    assert_eq!(refused["allowed_tools"], json!(["invoice_amend", "invoice_submit", "invoice_view"]));
    // The next step from draft, not a tool that cannot apply here.
    assert_eq!(refused["unlocked_by"], json!(["invoice_submit"]));
    // Every result names what may be called next on its invoice, a refusal too.
    assert_eq!(refused["next"], json!(["invoice_amend", "invoice_submit", "invoice_view"]));

    // A handler error fires no transition: still draft, submit still the way forward.
    let malformed = client.refused("invoice_submit", inv("nope")).await;
    assert_eq!(
        (malformed["code"].as_str(), malformed["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/id"))
    );
    let invalid = client.refused("invoice_submit", json!({ "domain": "invoice" })).await;
    assert_eq!(invalid["code"], "INVALID_ARGUMENT");
    assert_eq!(invalid["errors"][0]["field"], "/id");
    assert_eq!(client.ok("invoice_view", inv("INV-7")).await["state"], "draft");

    // submit → review: the list changes and the client is told.
    let submitted = client.ok("invoice_submit", inv("INV-7")).await;
    assert_eq!(submitted["state"], "review");
    assert_eq!(submitted["next"], json!(["invoice_approve", "invoice_reject", "invoice_view"]), "{submitted}");
    client.expect_list_changed().await;
    assert_eq!(client.tool_names().await, ["invoice_approve", "invoice_reject", "invoice_view"]);
    assert_eq!(client.pending_list_changed(), 0, "the failed calls must not have notified");

    // approve → approved: now discharge is listed, with its full description.
    assert_eq!(client.ok("invoice_approve", inv("INV-7")).await["state"], "approved");
    client.expect_list_changed().await;
    let tools = client.tools().await;
    let discharge = tools.iter().find(|t| t.name == "invoice_discharge").expect("discharge listed once approved");
    assert!(discharge.description.as_deref().unwrap().starts_with("Discharge (pay) an approved invoice"));

    // The receipt does not exist before the invoice is paid.
    let receipt = || rmcp::model::ReadResourceRequestParams::new("invoice://INV-7/receipt");
    let unpaid = client.service.read_resource(receipt()).await.expect_err("no receipt before payment");
    assert!(unpaid.to_string().contains("no resource `invoice://INV-7/receipt`"), "{unpaid}");

    // discharge works, once.
    let done = client.ok("invoice_discharge", inv("INV-7")).await;
    assert_eq!((done["state"].as_str(), done["outcome"].as_str()), (Some("discharged"), Some("discharged")));
    assert_eq!(done["next"], json!(["invoice_view"]), "a paid invoice can only be looked at");
    client.expect_list_changed().await;
    assert_eq!(client.tool_names().await, ["invoice_view"]);
    assert_eq!(client.refused("invoice_discharge", inv("INV-7")).await["current_state"], "discharged");
    let paid = client.service.read_resource(receipt()).await.expect("the receipt of a paid invoice");
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &paid.contents[0] else {
        panic!("{paid:?}")
    };
    assert!(text.starts_with("Receipt: invoice INV-7, "), "{text}");
}

/// The machine belongs to each invoice: approving INV-1 does not make INV-2 payable.
async fn another_invoice_is_gated_on_its_own_state(mut client: TestClient) {
    client.ok("invoice_submit", inv("INV-1")).await;
    client.expect_list_changed().await;
    client.ok("invoice_approve", inv("INV-1")).await;
    client.expect_list_changed().await;
    let refused = client.refused("invoice_discharge", inv("INV-2")).await;
    assert_eq!(refused["code"], "FORBIDDEN");
    assert_eq!(refused["instance"], "INV-2");
    assert_eq!(refused["current_state"], "draft");
    assert_eq!(
        refused["allowed_tools"],
        json!(["invoice_amend", "invoice_submit", "invoice_view"]),
        "what INV-2 allows"
    );
    assert!(refused["message"].as_str().unwrap().contains("`invoice` `INV-2` is in state `draft`"), "{refused}");
    // INV-1 is still payable, and is paid once.
    assert_eq!(client.ok("invoice_discharge", inv("INV-1")).await["state"], "discharged");
    assert_eq!(client.ok("invoice_view", inv("INV-2")).await["state"], "draft");
}

/// An invoice is one object whoever looks at it: paid in one session, paid in all.
async fn sessions_share_each_invoice(mut first: TestClient, mut second: TestClient) {
    first.ok("invoice_submit", inv("INV-1")).await;
    first.expect_list_changed().await;
    first.ok("invoice_approve", inv("INV-1")).await;
    first.expect_list_changed().await;
    assert_eq!(first.ok("invoice_discharge", inv("INV-1")).await["state"], "discharged");
    first.expect_list_changed().await;

    // The second session lists from the initial state until it touches an invoice...
    assert_eq!(second.tool_names().await, ["invoice_amend", "invoice_submit", "invoice_view"]);
    // ...then from the invoice it works on: INV-1 is paid, here too.
    assert_eq!(second.ok("invoice_view", inv("INV-1")).await["state"], "discharged");
    second.expect_list_changed().await;
    assert_eq!(second.tool_names().await, ["invoice_view"]);
    let again = second.refused("invoice_discharge", inv("INV-1")).await;
    assert_eq!((again["code"].as_str(), again["current_state"].as_str()), (Some("FORBIDDEN"), Some("discharged")));
    assert_eq!(second.refused("invoice_submit", inv("INV-1")).await["current_state"], "discharged");
    // The first session's notifications were its own: the round trips above came after
    // them, and none reached the second session but the one its own view caused.
    assert_eq!(second.pending_list_changed(), 0, "another session's transition notified this one");
}

async fn unknown_tools_are_protocol_errors(client: TestClient) {
    let error = client.try_call("invoice_pay", inv("INV-1")).await.expect_err("unknown tool");
    let rmcp::service::ServiceError::McpError(error) = error else { panic!("expected a JSON-RPC error: {error:?}") };
    assert_eq!(error.code.0, -32602);
    assert!(error.message.contains("invoice_pay"));
}

#[tokio::test]
async fn stdio_walks_the_workflow() {
    walk_the_invoice_workflow(TestClient::stdio_example("invoice").await).await;
}

#[tokio::test]
async fn http_walks_the_workflow() {
    walk_the_invoice_workflow(http_clerk().await).await;
}

#[tokio::test]
async fn stdio_gates_each_invoice_on_its_own_state() {
    another_invoice_is_gated_on_its_own_state(TestClient::stdio_example("invoice").await).await;
}

#[tokio::test]
async fn http_gates_each_invoice_on_its_own_state() {
    another_invoice_is_gated_on_its_own_state(http_clerk().await).await;
}

#[tokio::test]
async fn http_sessions_on_one_server_share_each_invoice() {
    let first = http_clerk().await;
    // The second session talks to the *same* server process as the first.
    let second = TestClient::http_as(first.url.as_deref().unwrap(), Lifecycle::Session, Some(CLERK_TOKEN)).await;
    sessions_share_each_invoice(first, second).await;
}

/// Over HTTP without a token, nobody may set an amount: `invoice_amend` is not listed,
/// and calling it anyway is refused before the handler runs, the draft's amount
/// unchanged. The other steps serve anyone, as the demo always has.
#[tokio::test]
async fn http_without_a_token_cannot_amend() {
    let client = TestClient::http_example_with("invoice", &["--token", CLERK], None).await;
    assert_eq!(client.tool_names().await, ["invoice_submit", "invoice_view"]);
    let amend = json!({ "domain": "invoice", "id": "INV-5", "amount": { "amount": "1.00", "currency": "EUR" } });
    let refused = client.refused("invoice_amend", amend).await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
    assert_eq!(client.ok("invoice_view", inv("INV-5")).await["amount"]["amount"], "105.00");
    assert_eq!(client.ok("invoice_submit", inv("INV-5")).await["state"], "review");
}

#[tokio::test]
async fn stdio_unknown_tool_is_invalid_params() {
    unknown_tools_are_protocol_errors(TestClient::stdio_example("invoice").await).await;
}

#[tokio::test]
async fn http_unknown_tool_is_invalid_params() {
    unknown_tools_are_protocol_errors(TestClient::http_example("invoice").await).await;
}

/// Amounts are money: a float, a third decimal in euros or a lowercase currency is
/// refused before the handler runs, every bad field at once; the handler's own refusal
/// (another currency) says what to do and that the same call will not succeed; once the
/// invoice is submitted, its amount can no longer change.
#[tokio::test]
async fn amounts_are_money_and_fixed_once_submitted() {
    let client = TestClient::stdio_example("invoice").await;
    let amend = |amount: Value| json!({ "domain": "invoice", "id": "INV-21", "amount": amount });

    let refused = client.refused("invoice_amend", amend(json!({ "amount": 99.5, "currency": "EUR" }))).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT");
    assert_eq!(refused["errors"][0]["field"], "/amount");
    assert!(refused["errors"][0]["problem"].as_str().unwrap().contains("never a float"), "{refused}");
    let refused = client.refused("invoice_amend", amend(json!({ "amount": "99.505", "currency": "EUR" }))).await;
    assert_eq!(refused["errors"][0]["problem"], "has 3 decimal places, but EUR has 2");
    let refused = client.refused("invoice_amend", amend(json!({ "amount": "99.50", "currency": "eur" }))).await;
    assert_eq!(refused["errors"][0]["problem"], "has the `currency` in lowercase: ISO 4217 codes are uppercase, `EUR`");
    assert_eq!(
        client.ok("invoice_view", inv("INV-21")).await["amount"],
        json!({ "amount": "121.00", "currency": "EUR" })
    );

    let mismatch = client.refused("invoice_amend", amend(json!({ "amount": "99.50", "currency": "USD" }))).await;
    assert_eq!(mismatch["code"], "CURRENCY_MISMATCH");
    assert_eq!(mismatch["hint"], "convert the amount to EUR, then call invoice_amend again");
    assert_eq!(mismatch["retryable"], false);

    let amended = client.ok("invoice_amend", amend(json!({ "amount_minor": 9950, "currency": "EUR" }))).await;
    assert_eq!(amended["amount"], json!({ "amount": "99.50", "currency": "EUR" }));
    assert_eq!(client.ok("invoice_view", inv("INV-21")).await["amount"]["amount"], "99.50");

    client.ok("invoice_submit", inv("INV-21")).await;
    let refused = client.refused("invoice_amend", amend(json!({ "amount": "1.00", "currency": "EUR" }))).await;
    assert_eq!((refused["code"].as_str(), refused["current_state"].as_str()), (Some("FORBIDDEN"), Some("review")));
}

/// An invoice has one spelling: once `INV-1` is paid, `INV-01`, `INV-+1` and `inv-1`
/// (which the handler would read as invoice 1) cannot pay it again — they name no
/// invoice at all.
#[tokio::test]
async fn another_spelling_of_a_paid_invoice_cannot_pay_it_again() {
    let client = TestClient::stdio_example("invoice").await;
    for step in ["invoice_submit", "invoice_approve", "invoice_discharge"] {
        client.ok(step, inv("INV-1")).await;
    }
    for spelling in ["INV-01", "INV-+1", "inv-1", "INV-1 ", "INV-001"] {
        for step in ["invoice_submit", "invoice_approve", "invoice_discharge"] {
            let refused = client.refused(step, inv(spelling)).await;
            assert_eq!(
                (refused["code"].as_str(), refused["errors"][0]["field"].as_str()),
                (Some("INVALID_ARGUMENT"), Some("/id")),
                "{step} {spelling:?}: {refused}"
            );
        }
    }
    assert_eq!(client.ok("invoice_view", inv("INV-1")).await["state"], "discharged");
}

/// The state gate speaks before the argument check: discharging a draft with an unknown
/// field hears FORBIDDEN (call `invoice_submit`), not a field to remove.
#[tokio::test]
async fn a_draft_with_an_unknown_field_hears_forbidden() {
    let client = TestClient::stdio_example("invoice").await;
    let refused =
        client.refused("invoice_discharge", json!({ "domain": "invoice", "id": "INV-5", "colour": "red" })).await;
    assert_eq!((refused["code"].as_str(), refused["current_state"].as_str()), (Some("FORBIDDEN"), Some("draft")));
}

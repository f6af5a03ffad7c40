//! The channels a one-time code travels by — a webhook POST to a loopback service, TOTP
//! from an authenticator app — and a threshold below which no code is asked for; and when
//! a code is spent: by the commit of the transition it confirms, so a call that never
//! commits leaves it live, and two calls presenting it commit once (on the memory store, a
//! SQLite file, and on Redis and Postgres when `TOOLGATE_TEST_REDIS_URL` /
//! `TOOLGATE_TEST_POSTGRES_URL` name them).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use common::clients::Lifecycle;
use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::confirm::TotpSecrets;
use toolgate::prelude::*;
use toolgate::types::Money;
use toolgate_runtime::confirm::WebhookSender;

#[derive(Deserialize, JsonSchema)]
struct Payout {
    /// To whom.
    to: String,
    /// How much.
    amount: Money,
}

#[derive(Serialize, JsonSchema)]
struct Paid {
    to: String,
}

/// Pay out an amount. Does not refund.
#[action(domain = "payout", transactional, confirm = "otp", confirm_above = "amount > 100.00 EUR")]
async fn payout_send(payout: Payout) -> Result<Paid, ToolError> {
    let _ = payout.amount;
    Ok(Paid { to: payout.to })
}

const TOKEN: &str = "payer-token-0123456789";

fn payer() -> Principal {
    Principal::new("payer").with_tenant("acme")
}

fn eur(amount: &str) -> Value {
    json!({ "amount": amount, "currency": "EUR" })
}

/// A webhook on loopback that keeps what it is sent.
async fn webhook() -> (String, Arc<Mutex<Vec<Value>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let kept = received.clone();
    let router = axum::Router::new().route(
        "/otp",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/otp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (url, received)
}

#[tokio::test]
async fn a_code_posted_to_a_webhook_confirms_the_call_and_small_amounts_need_none() {
    let (hook, received) = webhook().await;
    let server = Server::from_registry("payouts")
        .authenticator(StaticTokens::new().token(TOKEN, payer()))
        .otp_sender(WebhookSender::new(hook, "sms"))
        .build()
        .expect("server");
    let url = serve_in_process(server).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;

    // At or below the threshold: no code.
    client.ok("payout_send", json!({ "domain": "payout", "to": "bob", "amount": eur("100.00") })).await;
    assert!(received.lock().unwrap().is_empty());
    // Another currency than the threshold's is never waved through.
    let other = client
        .refused(
            "payout_send",
            json!({ "domain": "payout", "to": "bob", "amount": { "amount": "1.00", "currency": "USD" } }),
        )
        .await;
    assert_eq!(other["code"], "CONFIRMATION_REQUIRED", "{other}");

    let call = json!({ "domain": "payout", "to": "bob", "amount": eur("100.01") });
    let required = client.refused("payout_send", call.clone()).await;
    assert_eq!((required["code"].as_str(), required["channel"].as_str()), (Some("CONFIRMATION_REQUIRED"), Some("sms")));
    let challenge_id = required["challenge_id"].as_str().unwrap();
    let delivery =
        received.lock().unwrap().iter().find(|d| d["challenge_id"] == challenge_id).cloned().expect("posted");
    assert_eq!((delivery["principal"].as_str(), delivery["tool"].as_str()), (Some("payer"), Some("payout_send")));
    let otp = delivery["otp"].as_str().unwrap();
    assert!(otp.len() == 6 && otp.bytes().all(|b| b.is_ascii_digit()), "{otp}");
    let mut confirmed = call;
    confirmed["challenge_id"] = challenge_id.into();
    confirmed["otp"] = otp.into();
    client.ok("payout_send", confirmed).await;
}

#[tokio::test]
async fn a_totp_code_from_the_principal_s_app_confirms_the_call() {
    let secret = b"12345678901234567890".to_vec();
    let server = Server::from_registry("payouts")
        .authenticator(StaticTokens::new().token(TOKEN, payer()))
        .totp(TotpSecrets::new().secret(&payer(), secret.clone()))
        .build()
        .expect("server");
    let url = serve_in_process(server).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;
    let call = json!({ "domain": "payout", "to": "bob", "amount": eur("500.00") });
    let required = client.refused("payout_send", call.clone()).await;
    assert_eq!(
        (required["code"].as_str(), required["channel"].as_str()),
        (Some("CONFIRMATION_REQUIRED"), Some("totp"))
    );
    let challenge_id = required["challenge_id"].as_str().unwrap();

    // What the authenticator app shows now (RFC 6238: SHA-1, 6 digits, 30 s).
    let totp = totp_rs::Builder::new().with_secret(secret).build().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let code = totp.generate(now).to_string();
    let wrong = if code == "000000" { "111111" } else { "000000" };

    let mut attempt = call.clone();
    attempt["challenge_id"] = challenge_id.into();
    attempt["otp"] = wrong.into();
    let failed = client.refused("payout_send", attempt.clone()).await;
    assert_eq!(failed["code"], "CONFIRMATION_FAILED", "{failed}");
    attempt["otp"] = code.into();
    client.ok("payout_send", attempt).await;
}

/// A client that takes URL-mode elicitation: it keeps every URL it is asked to show and
/// accepts (or declines) them.
#[derive(Clone)]
struct PageClient {
    shown: Arc<Mutex<Vec<String>>>,
    accept: bool,
}

impl rmcp::ClientHandler for PageClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let elicitation =
            rmcp::model::ElicitationCapability::new().with_url(rmcp::model::UrlElicitationCapability::new());
        let capabilities = rmcp::model::ClientCapabilities::builder().enable_elicitation_with(elicitation).build();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("page-client", "0.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } = request {
            self.shown.lock().unwrap().push(url);
        }
        let action =
            if self.accept { rmcp::model::ElicitationAction::Accept } else { rmcp::model::ElicitationAction::Decline };
        Ok(rmcp::model::ElicitResult::new(action))
    }
}

/// Serves `server` to `handler` over an in-memory pipe, as stdio would.
async fn connect<H: rmcp::ClientHandler>(
    server: &Server,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::ServiceExt;
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let connection = server.connection();
    tokio::spawn(async move {
        let running = connection.serve(tokio::io::split(server_io)).await.expect("server");
        let _ = running.waiting().await;
    });
    handler.serve(tokio::io::split(client_io)).await.expect("client")
}

async fn call<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    arguments: Value,
) -> (Value, bool) {
    let params =
        rmcp::model::CallToolRequestParams::new("payout_send").with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(params).await.expect("a tool result");
    (result.structured_content.unwrap(), result.is_error == Some(true))
}

#[tokio::test]
async fn a_client_that_takes_url_elicitation_is_shown_the_code_on_the_confirmation_page() {
    let server = Server::from_registry("payouts")
        .stdio_principal(payer())
        .confirmation_page("http://127.0.0.1:9/confirm")
        .build()
        .expect("server");
    let shown = Arc::new(Mutex::new(Vec::new()));
    let client = connect(&server, PageClient { shown: shown.clone(), accept: true }).await;
    let arguments = json!({ "domain": "payout", "to": "bob", "amount": eur("250.00") });
    let (required, is_error) = call(&client, arguments.clone()).await;
    assert!(is_error && required["code"] == "CONFIRMATION_REQUIRED", "{required}");
    assert_eq!(required["channel"], "url");
    assert!(!required.to_string().contains("code="), "the code never reaches the model: {required}");
    let url = shown.lock().unwrap().pop().expect("the page was offered");
    let (page, fragment) = url.split_once('#').unwrap();
    assert_eq!(page, "http://127.0.0.1:9/confirm");
    let field =
        |name: &str| fragment.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).unwrap().to_string();
    assert_eq!(field("challenge"), required["challenge_id"].as_str().unwrap());
    let mut confirming = arguments;
    confirming["challenge_id"] = required["challenge_id"].clone();
    confirming["otp"] = field("code").into();
    let (paid, is_error) = call(&client, confirming).await;
    assert!(!is_error, "{paid}");
    assert_eq!(paid["to"], "bob");
}

#[tokio::test]
async fn a_declined_page_confirms_nothing_and_other_clients_get_the_configured_channel() {
    let outbox = common::confirm::Outbox::new();
    let server = Server::from_registry("payouts")
        .stdio_principal(payer())
        .confirmation_page("http://127.0.0.1:9/confirm")
        .otp_sender(toolgate::confirm::OutboxSender::new(outbox.path()))
        .build()
        .expect("server");
    let declining = connect(&server, PageClient { shown: Arc::default(), accept: false }).await;
    let (declined, _) = call(&declining, json!({ "domain": "payout", "to": "bob", "amount": eur("250.00") })).await;
    assert_eq!(declined["code"], "CONFIRMATION_FAILED", "{declined}");
    // A client without URL-mode elicitation: the outbox.
    let plain = connect(&server, ()).await;
    let (required, _) = call(&plain, json!({ "domain": "payout", "to": "bob", "amount": eur("250.00") })).await;
    assert_eq!(
        (required["code"].as_str(), required["channel"].as_str()),
        (Some("CONFIRMATION_REQUIRED"), Some("outbox"))
    );
    assert_eq!(outbox.code(required["challenge_id"].as_str().unwrap()).len(), 6);
}

#[tokio::test]
async fn the_server_serves_the_confirmation_page() {
    let server = Server::from_registry("payouts")
        .stdio_principal(payer())
        .confirmation_page("http://127.0.0.1:9/confirm")
        .build()
        .expect("server");
    let url = serve_in_process(server).await;
    let page = reqwest::get(url.replace("/mcp", "/confirm")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    assert!(html.contains("one-time code") && html.contains("location.hash"), "{html}");
}

/// How many challenges one principal may be issued for a tool is the builder's to say (a
/// manager confirming a queue of approvals needs more than 10 in 10 minutes), and the
/// refusal says the limit once, plainly.
#[tokio::test]
async fn the_builder_sets_how_many_challenges_a_principal_gets() {
    let (hook, _received) = webhook().await;
    let server = Server::from_registry("payouts")
        .authenticator(StaticTokens::new().token(TOKEN, payer()))
        .otp_sender(WebhookSender::new(hook, "sms"))
        .challenges_per(3, std::time::Duration::from_secs(3600))
        .build()
        .expect("server");
    let client = TestClient::http_as(&serve_in_process(server).await, Lifecycle::Sessionless, Some(TOKEN)).await;
    let call = json!({ "domain": "payout", "to": "bob", "amount": eur("500.00") });
    for _ in 0..3 {
        assert_eq!(client.refused("payout_send", call.clone()).await["code"], "CONFIRMATION_REQUIRED");
    }
    let capped = client.refused("payout_send", call).await;
    assert_eq!(capped["code"], "RATE_LIMITED", "{capped}");
    let message = capped["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("`3 confirmation challenges per 1 hour` reached: wait "), "{capped}");
    assert_eq!(message.matches('`').count(), 2, "one quoted limit, no quotes inside it: {message}");
}

// An expense report approved with the approver's one-time code; `HOLD` keeps it submitted
// (its handler holds the instance's lease for a while). Its tools are in the payouts'
// domain: one domain, so sessionless calls need no conversation.
toolgate::machine! {
    id: "approval",
    key: "id",
    initial: "submitted",
    states: {
        submitted: { on: { APPROVE: "approved", AMEND: "submitted", HOLD: "submitted" } },
        approved:  { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct ApprovalRef {
    /// The report, e.g. `R-1`.
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Approval {
    id: String,
}

/// What a test scripts for the next runs of one report's approval handler.
enum Next {
    Fail,
    Pause(u64),
}

/// Per report: what its approval handler does next, and how often it ran.
static SCRIPT: LazyLock<Mutex<HashMap<String, Vec<Next>>>> = LazyLock::new(Default::default);
static RUNS: LazyLock<Mutex<HashMap<String, u32>>> = LazyLock::new(Default::default);

/// Approve a submitted expense report. Needs the approver's one-time code. Does not hold it.
#[action(
    domain = "payout",
    machine = "approval",
    bind_state = "submitted",
    transition = "APPROVE",
    transactional,
    confirm = "otp"
)]
async fn payout_approve(report: ApprovalRef) -> Result<Approval, ToolError> {
    scripted(report).await
}

/// Amend a submitted report; it stays submitted. Needs the approver's one-time code. Does not approve it.
#[action(
    domain = "payout",
    machine = "approval",
    bind_state = "submitted",
    transition = "AMEND",
    transactional,
    confirm = "otp"
)]
async fn payout_amend(report: ApprovalRef) -> Result<Approval, ToolError> {
    scripted(report).await
}

/// Runs what the test scripted for `report`, and counts the run.
async fn scripted(report: ApprovalRef) -> Result<Approval, ToolError> {
    *RUNS.lock().unwrap().entry(report.id.clone()).or_default() += 1;
    let next = SCRIPT.lock().unwrap().get_mut(&report.id).filter(|s| !s.is_empty()).map(|s| s.remove(0));
    match next {
        Some(Next::Fail) => return Err(ToolError::failed("LEDGER_DOWN", "the ledger did not answer")),
        Some(Next::Pause(ms)) => tokio::time::sleep(Duration::from_millis(ms)).await,
        None => {}
    }
    Ok(Approval { id: report.id })
}

/// Hold a submitted report for a moment; it stays submitted. Does not approve it.
#[action(domain = "payout", machine = "approval", bind_state = "submitted", transition = "HOLD", transactional)]
async fn payout_hold(report: ApprovalRef) -> Result<Approval, ToolError> {
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    Ok(Approval { id: report.id })
}

/// The stores the approval tests run on: memory, a SQLite file of their own, and the test
/// services that are set.
fn stores() -> Vec<String> {
    let file = std::env::temp_dir().join(format!("toolgate-approvals-{}.db", fresh_report()));
    let services = ["TOOLGATE_TEST_REDIS_URL", "TOOLGATE_TEST_POSTGRES_URL"];
    let set = services.iter().filter_map(|var| std::env::var(var).ok().filter(|url| !url.is_empty()));
    ["memory".to_string(), format!("sqlite:{}", file.display())].into_iter().chain(set).collect()
}

/// Removes a SQLite store's files once its test is done with it (the others outlive it).
fn forget(store: &str) {
    if let Some(path) = store.strip_prefix("sqlite:") {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }
}

/// A report id no earlier run used (the test services outlive a run).
fn fresh_report() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("R-{nanos}")
}

/// An approvals server on `store` (calls wait `lease_wait` for a lease, handlers run 2 s at
/// most), two clients of the same approver, and what its webhook was sent.
async fn approvals(store: &str, lease_wait: Duration) -> (TestClient, TestClient, Arc<Mutex<Vec<Value>>>) {
    let (hook, received) = webhook().await;
    let mut server = Server::from_registry("approvals")
        .authenticator(StaticTokens::new().token(TOKEN, payer()))
        .otp_sender(WebhookSender::new(hook, "sms"))
        .lease_wait(lease_wait)
        .handler_timeout(Duration::from_secs(2))
        .handle_key("confirmations-test-handle-key-000000001");
    if store != "memory" {
        let options = toolgate::store::StoreOptions::default();
        server = server.store_url(store, &options).await.expect("the test store");
    }
    let url = serve_in_process(server.build().expect("server")).await;
    let a = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;
    let b = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;
    (a, b, received)
}

/// Asks to approve `report`: the confirming arguments, with the code the webhook was sent.
async fn approval_code(client: &TestClient, received: &Mutex<Vec<Value>>, report: &str) -> Value {
    code_for(client, received, "payout_approve", report).await
}

/// Asks to call the confirmed `tool` on `report`: the confirming arguments, with the code.
async fn code_for(client: &TestClient, received: &Mutex<Vec<Value>>, tool: &str, report: &str) -> Value {
    let call = json!({ "domain": "payout", "id": report });
    let required = client.refused(tool, call.clone()).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
    let challenge_id = required["challenge_id"].as_str().unwrap();
    let sent = received.lock().unwrap().iter().find(|d| d["challenge_id"] == challenge_id).cloned().expect("sent");
    let mut confirming = call;
    confirming["challenge_id"] = challenge_id.into();
    confirming["otp"] = sent["otp"].clone();
    confirming
}

fn runs(report: &str) -> u32 {
    RUNS.lock().unwrap().get(report).copied().unwrap_or(0)
}

/// A confirmed call whose handler fails, or times out, commits nothing, and so spends
/// nothing: the same code confirms the good retry, once.
#[tokio::test]
async fn a_code_whose_call_failed_or_timed_out_confirms_the_retry() {
    for store in stores() {
        let (client, _, received) = approvals(&store, Duration::from_secs(2)).await;
        let report = fresh_report();
        SCRIPT.lock().unwrap().insert(report.clone(), vec![Next::Fail, Next::Pause(3_000)]);
        let confirming = approval_code(&client, &received, &report).await;
        let failed = client.refused("payout_approve", confirming.clone()).await;
        assert_eq!(failed["code"], "LEDGER_DOWN", "{store}: {failed}");
        let timed_out = client.refused("payout_approve", confirming.clone()).await;
        assert_ne!(timed_out["code"], "CONFIRMATION_FAILED", "{store}: {timed_out}");
        let approved = client.call("payout_approve", confirming.clone()).await;
        assert!(!approved.1, "{store}: the retry after a failure and a timeout was refused: {}", approved.0);
        assert_eq!(runs(&report), 3, "{store}");
        // Approved: the tool is no longer available to the report.
        let again = client.refused("payout_approve", confirming).await;
        assert_ne!(again["code"], "CONFIRMATION_FAILED", "{store}: {again}");
        assert_eq!(runs(&report), 3, "{store}");
        forget(&store);
    }
}

/// A confirmed call refused after its code was checked — `FLOW_BUSY` while another call
/// holds the report — leaves the code live: the retry, once the report is free, approves.
#[tokio::test]
async fn a_code_whose_call_was_refused_by_a_later_step_confirms_the_retry() {
    for store in stores() {
        let (client, other, received) = approvals(&store, Duration::from_millis(300)).await;
        let report = fresh_report();
        let confirming = approval_code(&client, &received, &report).await;
        let hold = json!({ "domain": "payout", "id": report });
        let holding = tokio::spawn(async move { other.ok("payout_hold", hold).await });
        tokio::time::sleep(Duration::from_millis(400)).await;
        let busy = client.refused("payout_approve", confirming.clone()).await;
        assert_eq!(busy["code"], "FLOW_BUSY", "{store}: {busy}");
        holding.await.unwrap();
        let approved = client.call("payout_approve", confirming).await;
        assert!(!approved.1, "{store}: the retry after FLOW_BUSY was refused: {}", approved.0);
        assert_eq!(runs(&report), 1, "{store}: the refused call's handler ran");
        forget(&store);
    }
}

/// Two calls presenting one code at once: exactly one commits; the other, judged under the
/// report's lease once the first committed, is refused — as a used challenge when the
/// transition keeps the report's state (an amendment), by the state gate when it moved it
/// (an approval) — and its handler never runs.
#[tokio::test]
async fn two_presentations_of_one_code_commit_once() {
    for store in stores() {
        let (a, b, received) = approvals(&store, Duration::from_secs(2)).await;
        for (tool, refusal) in [("payout_approve", "FORBIDDEN"), ("payout_amend", "CONFIRMATION_FAILED")] {
            let report = fresh_report();
            SCRIPT.lock().unwrap().insert(report.clone(), vec![Next::Pause(600), Next::Pause(600)]);
            let confirming = code_for(&a, &received, tool, &report).await;
            let (first, second) = tokio::join!(a.call(tool, confirming.clone()), b.call(tool, confirming.clone()));
            let refused: Vec<&Value> =
                [&first, &second].into_iter().filter(|(_, error)| *error).map(|(r, _)| r).collect();
            assert_eq!(refused.len(), 1, "{store} {tool}: one commit: {first:?} {second:?}");
            assert_eq!(refused[0]["code"], refusal, "{store} {tool}: {}", refused[0]);
            assert_eq!(runs(&report), 1, "{store} {tool}: the second handler ran");
            // Spent: presented again, it confirms nothing.
            let again = a.refused(tool, confirming).await;
            assert_eq!(again["code"], refusal, "{store} {tool}: {again}");
            assert_eq!(runs(&report), 1, "{store} {tool}");
        }
        forget(&store);
    }
}

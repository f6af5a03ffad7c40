//! The channels a one-time code travels by — a webhook POST to a loopback service, TOTP
//! from an authenticator app — and a threshold below which no code is asked for.

mod common;

use std::sync::{Arc, Mutex};

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

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

//! What a Streamable HTTP deployment decides, through real requests: foreign browser
//! origins are refused (403), sessions are capped (503 past the cap, while live sessions
//! keep working) and closed when idle.

mod common;

use std::time::Duration;

use common::sessionless::{RawSession, SessionlessClient};
use common::{PATIENCE, TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Pong {
    pong: bool,
}

/// Answer a ping.
#[action(domain = "net")]
async fn ping() -> Result<Pong, ToolError> {
    Ok(Pong { pong: true })
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } },
    })
}

/// POSTs `initialize` with `headers`; returns the status, the headers and the body.
async fn post_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .timeout(PATIENCE)
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("POST initialize");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.text().await.unwrap_or_default())
}

async fn serve(builder: toolgate::ServerBuilder) -> String {
    serve_in_process(builder.build().expect("valid registry")).await
}

#[tokio::test]
async fn a_foreign_origin_is_forbidden() {
    let url = serve(Server::from_registry("net")).await;
    let (status, _, _) = post_initialize(&url, &[("origin", "http://evil.example.com")]).await;
    assert_eq!(status, 403, "a page on another origin opened a session");
    let (status, _, _) = post_initialize(&url, &[("origin", "http://localhost:5173")]).await;
    assert_eq!(status, 200, "a page served from loopback is refused");
    let (status, _, _) = post_initialize(&url, &[]).await;
    assert_eq!(status, 200, "a non-browser client (no Origin) is refused");

    // A deployment lists its own origins.
    let url = serve(Server::from_registry("net").allowed_origins(["https://app.example.com:443"])).await;
    assert_eq!(post_initialize(&url, &[("origin", "https://app.example.com")]).await.0, 200);
    assert_eq!(post_initialize(&url, &[("origin", "http://localhost:5173")]).await.0, 403);
}

#[tokio::test]
async fn past_the_session_cap_new_sessions_are_refused_and_live_ones_work() {
    let url = serve(Server::from_registry("net").max_sessions(2)).await;
    let first = TestClient::http(&url).await;
    let second = TestClient::http(&url).await;

    let (status, headers, body) = post_initialize(&url, &[]).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
    let error: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert!(error["error"]["message"].as_str().unwrap().contains("maximum of 2 sessions"), "{error}");

    // The live sessions keep working, and sessionless requests are not sessions.
    assert_eq!(first.ok("net_ping", json!({ "domain": "net" })).await["pong"], true);
    assert_eq!(second.ok("net_ping", json!({ "domain": "net" })).await["pong"], true);
    assert_eq!(SessionlessClient::new(&url).ok("net_ping", json!({ "domain": "net" })).await["pong"], true);

    // A closed session frees its place.
    first.service.cancel().await.expect("close the first session");
    tokio::time::timeout(PATIENCE, async {
        while post_initialize(&url, &[]).await.0 != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the closed session's place was not freed");
}

#[tokio::test]
async fn an_idle_session_is_closed() {
    let url = serve(Server::from_registry("net").session_idle_timeout(Duration::from_millis(500))).await;
    let session = RawSession::open(&url).await;
    assert_eq!(session.call("net_ping", json!({ "domain": "net" })).await.0["pong"], true);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reply = session.request("tools/list", json!({})).await;
    assert_eq!(reply.status, 404, "an idle session still answers: {:?}", reply.message);
}

/// POSTs `initialize` from the loopback address `from`; returns the status, the headers
/// and the body.
async fn initialize_from(url: &str, from: [u8; 4]) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(from))
        .timeout(PATIENCE)
        .build()
        .expect("client");
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string())
        .send()
        .await
        .expect("POST initialize");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.text().await.unwrap_or_default())
}

/// Past the per-client limit a client gets 429 with `Retry-After` and a JSON-RPC error
/// saying when to come back; another client (another address) is not held up. The limit
/// holds over every window: after `per / calls` the client is still refused (a refill
/// rate would admit it), and it is served again exactly when its oldest request leaves
/// the window.
#[tokio::test]
async fn a_client_past_its_rate_limit_gets_429_and_others_do_not() {
    let url = serve(Server::from_registry("net").client_rate_limit(3, Duration::from_millis(500))).await;
    for _ in 0..3 {
        assert_eq!(initialize_from(&url, [127, 0, 0, 1]).await.0, 200);
    }
    let (status, headers, body) = initialize_from(&url, [127, 0, 0, 1]).await;
    assert_eq!(status, 429, "{body}");
    let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert_eq!(retry_after, 1, "Retry-After is in whole seconds, rounded up");
    let body: Value = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert_eq!(body["error"]["data"]["limit"], "3/500ms");
    let wait = body["error"]["data"]["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 500, "retry_after_ms {wait}");
    assert!(body["error"]["message"].as_str().unwrap().contains("retry after"), "{body}");

    assert_eq!(initialize_from(&url, [127, 0, 0, 2]).await.0, 200, "another client is held up");
    let started = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(170)).await;
    if started.elapsed() < Duration::from_millis(wait) {
        assert_eq!(initialize_from(&url, [127, 0, 0, 1]).await.0, 429, "admitted again after per/N");
    }
    tokio::time::sleep(Duration::from_millis(wait).saturating_sub(started.elapsed()) + Duration::from_millis(5)).await;
    assert_eq!(initialize_from(&url, [127, 0, 0, 1]).await.0, 200, "served again after the wait");
}

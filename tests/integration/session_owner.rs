//! A session id is not a key (issue 34 §1). Whoever holds principal A's `Mcp-Session-Id`
//! — another principal, or a caller with no token — must not act in A's session: not
//! answer what the server asked A (`elicitation/create`), not cancel A's call, not list,
//! call, set the log level, listen or close. Each message that names a session is
//! checked once, at the front, and a stranger gets exactly what an unknown session gets,
//! byte for byte. Through the conformance example over stateful Streamable HTTP.

use std::time::Duration;

use crate::common::{PATIENCE, spawn_http_example};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

const ALICE: &str = "session-owner-alice-0123456789";
const BOB: &str = "session-owner-bob-0123456789ab";
const VERSION: &str = "2025-11-25";

async fn server() -> (tokio::process::Child, String) {
    let tokens = [format!("alice={ALICE}"), format!("bob={BOB}")];
    let args = ["--token", tokens[0].as_str(), "--token", tokens[1].as_str()];
    spawn_http_example("conformance", &args, &[]).await
}

/// The headers of a request on `session` as `token` (none: no `Authorization`).
fn headers(session: &str, token: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("accept", HeaderValue::from_static("application/json, text/event-stream"));
    headers.insert("mcp-protocol-version", HeaderValue::from_static(VERSION));
    headers.insert(HeaderName::from_static("mcp-session-id"), HeaderValue::from_str(session).unwrap());
    if let Some(token) = token {
        headers.insert("authorization", HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
    }
    headers
}

/// What a reply shows: its status, media type and whole body.
#[derive(Debug, PartialEq)]
struct Seen {
    status: u16,
    content_type: Option<String>,
    body: String,
}

async fn seen(request: reqwest::RequestBuilder) -> Seen {
    let reply = tokio::time::timeout(PATIENCE, request.send()).await.expect("no answer").expect("request");
    let status = reply.status().as_u16();
    let content_type = reply.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
    // A stream that opened is not read to its end: its first bytes say enough.
    let body = match tokio::time::timeout(Duration::from_millis(500), reply.text()).await {
        Ok(text) => text.unwrap_or_default(),
        Err(_) => "(a stream that stayed open)".to_string(),
    };
    Seen { status, content_type, body }
}

/// Opens a session as `token` declaring elicitation; its id.
async fn open(url: &str, token: &str) -> String {
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": { "elicitation": {} },
            "clientInfo": { "name": "owner", "version": "1" },
        },
    });
    let mut headers = headers("-", Some(token));
    headers.remove("mcp-session-id");
    let reply = http.post(url).headers(headers).json(&initialize).send().await.unwrap();
    assert_eq!(reply.status(), 200);
    let session = reply.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = reply.text().await;
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let reply = http.post(url).headers(headers_for(&session, token)).json(&initialized).send().await.unwrap();
    assert_eq!(reply.status(), 202);
    session
}

fn headers_for(session: &str, token: &str) -> HeaderMap {
    headers(session, Some(token))
}

/// Every kind of message that names a session, sent by `token` on `session`.
async fn every_kind(url: &str, session: &str, token: Option<&str>) -> Vec<(&'static str, Seen)> {
    let http = reqwest::Client::new();
    let post = |body: Value| http.post(url).headers(headers(session, token)).json(&body);
    let mut all = Vec::new();
    let request = |id: u64, method: &str, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    all.push(("tools/list", seen(post(request(7, "tools/list", json!({})))).await));
    let call = json!({ "name": "greet", "arguments": { "name": "Eve" } });
    all.push(("tools/call", seen(post(request(8, "tools/call", call))).await));
    all.push(("logging/setLevel", seen(post(request(9, "logging/setLevel", json!({ "level": "debug" })))).await));
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 2 } });
    all.push(("notifications/cancelled", seen(post(cancel)).await));
    let answer = json!({ "jsonrpc": "2.0", "id": 0, "result": { "action": "accept", "content": {} } });
    all.push(("a response", seen(post(answer)).await));
    let mut get_headers = headers(session, token);
    get_headers.insert("accept", HeaderValue::from_static("text/event-stream"));
    all.push(("GET", seen(http.get(url).headers(get_headers)).await));
    all.push(("DELETE", seen(http.delete(url).headers(headers(session, token))).await));
    all
}

/// Another principal and an anonymous caller, holding Alice's session id, get for every
/// method and message kind what they get for a session that does not exist; Alice's
/// session lives on (their DELETE closed nothing).
#[tokio::test]
async fn a_stranger_holding_a_session_id_gets_what_an_unknown_session_gets() {
    let (_server, url) = server().await;
    let session = open(&url, ALICE).await;
    let unknown = "4b6d1a52-7c1e-4f6b-9a53-2f0c8e9d1b7a";
    for (who, token) in [("bob", Some(BOB)), ("nobody", None)] {
        let as_unknown = every_kind(&url, unknown, token).await;
        let on_alices = every_kind(&url, &session, token).await;
        for ((kind, unknown), (_, alices)) in as_unknown.iter().zip(&on_alices) {
            assert_eq!(alices, unknown, "{who}, {kind} on Alice's session");
            // rmcp ends an unknown session without complaint (toolgate answers 200 for its 202).
            let expected = if *kind == "DELETE" { 200 } else { 404 };
            assert_eq!(alices.status, expected, "{who}, {kind}: {alices:?}");
        }
    }
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {} });
    let alices = seen(reqwest::Client::new().post(&url).headers(headers_for(&session, ALICE)).json(&list)).await;
    assert_eq!(alices.status, 200, "{alices:?}");
    assert!(alices.body.contains("\"greet\""), "{alices:?}");
}

/// The server asks Alice (`elicitation/create`) while her call waits. Bob, holding her
/// session id and guessing the server's request id (they are sequential), answers it and
/// cancels her call: both reach nothing. Alice's own answer is the one her tool gets.
#[tokio::test]
async fn a_stranger_cannot_answer_what_the_server_asked_or_cancel_the_call() {
    let (_server, url) = server().await;
    let session = open(&url, ALICE).await;
    let http = reqwest::Client::new();
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "test_elicitation", "arguments": { "message": "Who are you?" } },
    });
    let mut stream = http.post(&url).headers(headers_for(&session, ALICE)).json(&call).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    // Read the call's stream until the server's question arrives.
    let mut text = String::new();
    let asked: Value = tokio::time::timeout(PATIENCE, async {
        loop {
            let chunk = stream.chunk().await.unwrap().expect("the stream ended before the question");
            text.push_str(&String::from_utf8_lossy(&chunk));
            let question = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message["method"] == "elicitation/create");
            if let Some(question) = question {
                return question;
            }
        }
    })
    .await
    .expect("no elicitation/create on the call's stream");
    let question_id = asked["id"].clone();

    let forged = json!({
        "jsonrpc": "2.0", "id": question_id,
        "result": { "action": "accept", "content": { "username": "mallory", "email": "mallory@example.com" } },
    });
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 2 } });
    for token in [Some(BOB), None] {
        for message in [&forged, &cancel] {
            let reply = seen(http.post(&url).headers(headers(&session, token)).json(message)).await;
            assert_eq!(reply.status, 404, "{token:?} sent {message} on Alice's session: {reply:?}");
        }
    }

    let answer = json!({
        "jsonrpc": "2.0", "id": question_id,
        "result": { "action": "accept", "content": { "username": "alice", "email": "alice@example.com" } },
    });
    let reply = http.post(&url).headers(headers_for(&session, ALICE)).json(&answer).send().await.unwrap();
    assert_eq!(reply.status(), 202);
    let rest = tokio::time::timeout(PATIENCE, stream.text()).await.expect("the call never ended").unwrap();
    text.push_str(&rest);
    assert!(text.contains(r#"\"username\":\"alice\""#), "{text}");
    assert!(!text.contains("mallory"), "a stranger's answer reached Alice's tool: {text}");
}

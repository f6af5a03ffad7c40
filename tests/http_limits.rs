//! What a Streamable HTTP deployment decides, through real requests: foreign browser
//! origins are refused (403), sessions are capped (503 past the cap, whatever the request's
//! headers say, while live sessions keep working) and closed when idle.

mod common;

use std::time::Duration;

use common::raw::{self, RawSession, SESSION_VERSION, SESSIONLESS_VERSION, SessionlessClient, initialize};
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

/// Take a while to answer.
#[action(domain = "net")]
async fn wait() -> Result<Pong, ToolError> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(Pong { pong: true })
}

async fn serve(builder: toolgate::ServerBuilder) -> String {
    serve_in_process(builder.build().expect("valid registry")).await
}

#[tokio::test]
async fn a_foreign_origin_is_forbidden() {
    let url = serve(Server::from_registry("net")).await;
    let reply = initialize(&url, &[("origin", "http://evil.example.com")]).await;
    assert_eq!(reply.status, 403, "a page on another origin opened a session");
    let reply = initialize(&url, &[("origin", "http://localhost:5173")]).await;
    assert_eq!(reply.status, 200, "a page served from loopback is refused");
    assert_eq!(initialize(&url, &[]).await.status, 200, "a non-browser client (no Origin) is refused");

    // A deployment lists its own origins.
    let url = serve(Server::from_registry("net").allowed_origins(["https://app.example.com:443"])).await;
    assert_eq!(initialize(&url, &[("origin", "https://app.example.com")]).await.status, 200);
    assert_eq!(initialize(&url, &[("origin", "http://localhost:5173")]).await.status, 403);
}

/// A disallowed Host or Origin is refused before the body is read: a malformed body from a
/// foreign page gets 403 as a well-formed one does, not the parse error a local client gets.
#[tokio::test]
async fn a_foreign_origin_is_refused_before_its_body_is_read() {
    let url = serve(Server::from_registry("net")).await;
    let post = |headers: &[(&str, &str)]| {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body("not json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(post(&[("origin", "http://evil.example.com")]).await, 403);
    assert_eq!(post(&[("host", "evil.example.com")]).await, 403);
    assert_eq!(post(&[("origin", "http://localhost:5173")]).await, 400, "a loopback page's malformed body");
    assert_eq!(post(&[]).await, 400);
}

#[tokio::test]
async fn past_the_session_cap_new_sessions_are_refused_and_live_ones_work() {
    let url = serve(Server::from_registry("net").max_sessions(2)).await;
    let first = TestClient::http(&url).await;
    let second = TestClient::http(&url).await;

    let reply = initialize(&url, &[]).await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(reply.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
    let error = reply.error();
    assert!(error["message"].as_str().unwrap().contains("maximum of 2 sessions"), "{error}");

    // The live sessions keep working, and sessionless requests are not sessions.
    assert_eq!(first.ok("net_ping", json!({ "domain": "net" })).await["pong"], true);
    assert_eq!(second.ok("net_ping", json!({ "domain": "net" })).await["pong"], true);
    assert_eq!(SessionlessClient::new(&url).ok("net_ping", json!({ "domain": "net" })).await["pong"], true);

    // A closed session frees its place.
    first.service.cancel().await.expect("close the first session");
    tokio::time::timeout(PATIENCE, async {
        while initialize(&url, &[]).await.status != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the closed session's place was not freed");
}

/// The cap counts every session rmcp opens, whatever the request's headers say: an
/// `initialize` naming the sessionless revision (`MCP-Protocol-Version: 2026-07-28`) still
/// opens a session, so past the cap it is refused like any other. Initializes racing for
/// the last places get exactly those places.
#[tokio::test]
async fn no_header_opens_a_session_past_the_cap() {
    let url = serve(Server::from_registry("net").max_sessions(3)).await;
    let first = RawSession::open(&url).await;

    let sessionless_header = [("MCP-Protocol-Version", SESSIONLESS_VERSION)];
    let attempts = (0..20).map(|i| {
        let url = url.clone();
        async move {
            match i % 2 {
                0 => RawSession::try_open(&url, SESSIONLESS_VERSION, &sessionless_header).await,
                _ => RawSession::try_open(&url, SESSION_VERSION, &[]).await,
            }
        }
    });
    let (opened, refused): (Vec<_>, Vec<_>) =
        futures::future::join_all(attempts).await.into_iter().partition(Result::is_ok);
    assert_eq!(opened.len(), 2, "{} sessions live under a cap of 3", opened.len() + 1);
    for refusal in refused {
        let reply = refusal.err().unwrap();
        assert_eq!(reply.status, 503, "{:?}", reply.message);
        assert_eq!(reply.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
        let message = reply.error()["message"].as_str().unwrap().to_string();
        assert!(message.contains("maximum of 3 sessions"), "{message}");
    }

    // Full: neither kind of initialize gets in, in sequence either.
    for _ in 0..3 {
        let refused = RawSession::try_open(&url, SESSIONLESS_VERSION, &sessionless_header).await;
        assert_eq!(refused.err().expect("a session past the cap").status, 503);
        let refused = RawSession::try_open(&url, SESSION_VERSION, &[]).await;
        assert_eq!(refused.err().expect("a session past the cap").status, 503);
    }

    // Every live session works.
    let opened: Vec<RawSession> = opened.into_iter().map(Result::unwrap).collect();
    for session in opened.iter().chain([&first]) {
        assert_eq!(session.call("net_ping", json!({ "domain": "net" })).await.0["pong"], true);
    }

    // A closed session frees its place at once.
    assert_eq!(first.close().await, 200);
    let again = RawSession::try_open(&url, SESSIONLESS_VERSION, &sessionless_header).await;
    let again = again.unwrap_or_else(|reply| panic!("the closed session's place was not freed: {}", reply.status));
    assert_eq!(again.call("net_ping", json!({ "domain": "net" })).await.0["pong"], true);
    assert_eq!(RawSession::try_open(&url, SESSION_VERSION, &[]).await.err().expect("past the cap").status, 503);
}

/// A session is closed once idle for the timeout: its GET stream ends (at the earliest a
/// timeout after the GET, the session's last activity), then the session is unknown (404).
#[tokio::test]
async fn an_idle_session_is_closed() {
    let idle = Duration::from_millis(150);
    let url = serve(Server::from_registry("net").session_idle_timeout(idle)).await;
    let session = RawSession::open(&url).await;
    assert_eq!(session.call("net_ping", json!({ "domain": "net" })).await.0["pong"], true);
    let waiting = std::time::Instant::now();
    session.wait_until_closed().await;
    assert!(waiting.elapsed() >= idle, "closed after {:?}, before the idle timeout", waiting.elapsed());
    // The server forgets the session right after its worker ends.
    tokio::time::timeout(PATIENCE, async {
        while session.request("tools/list", json!({})).await.status != 404 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("an idle session still answers");
}

/// POSTs `initialize` from the loopback address `from`; returns the status, the headers
/// and the body.
async fn initialize_from(url: &str, from: [u8; 4]) -> (u16, reqwest::header::HeaderMap, String) {
    let reply = raw::initialize_from(url, std::net::IpAddr::from(from)).await;
    (reply.status.as_u16(), reply.headers, reply.body)
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

/// A session whose calls the owned path serves (they never reach rmcp's session) is still
/// in use: it stays open past the idle timeout while they keep coming, and closes once
/// they stop.
#[tokio::test]
async fn a_session_kept_busy_by_owned_calls_stays_open() {
    let idle = Duration::from_millis(200);
    let url = serve(Server::from_registry("net").session_idle_timeout(idle)).await;
    let session = RawSession::open(&url).await;
    let busy = std::time::Instant::now();
    while busy.elapsed() < idle * 4 {
        let reply =
            session.request("tools/call", json!({ "name": "net_ping", "arguments": { "domain": "net" } })).await;
        assert_eq!(reply.status, 200, "the session closed while in use, after {:?}", busy.elapsed());
        assert!(reply.is_json(), "served by the owned path: {}", reply.content_type);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Left alone, it closes (any request to rmcp would count as activity: none is sent).
    tokio::time::sleep(idle * 3).await;
    assert_eq!(session.request("tools/list", json!({})).await.status, 404, "an idle session still answers");
}

/// A client cancels a call on its session, served by the owned path (no `Origin`) or by
/// rmcp (an allowed `Origin`, which the owned path leaves to rmcp): `notifications/cancelled`
/// with its request id stops the handler at once, and, as MCP asks, no response comes:
/// the call's event stream ends without one, alike through both paths. (The owned path
/// answered `CANCELLED`.)
#[tokio::test]
async fn a_client_cancels_a_session_call_and_gets_no_response() {
    let url = serve(Server::from_registry("net")).await;
    let session = RawSession::open(&url).await;
    let mut replies = Vec::new();
    for (id, headers) in [(9001, &[][..]), (9002, &[("Origin", "http://localhost:9")][..])] {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"net_wait","arguments":{{"domain":"net"}}}}}}"#
        );
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"changed my mind"}}}}"#
        );
        let started = std::time::Instant::now();
        let cancelling = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            session.post_raw(&cancel, 0).await.status
        };
        let (reply, cancelled) = tokio::join!(session.post_raw_with_headers(&call, id, headers), cancelling);
        assert_eq!(cancelled, 202);
        assert!(started.elapsed() < Duration::from_secs(4), "the handler ran on: {:?}", started.elapsed());
        replies.push(reply);
    }
    let shown = |reply: &common::raw::Reply| {
        (reply.status.as_u16(), reply.content_type.clone(), reply.message.clone(), reply.before.clone())
    };
    let (owned, rmcp) = (shown(&replies[0]), shown(&replies[1]));
    assert_eq!(owned, rmcp, "the owned path answers a cancelled call unlike rmcp");
    assert_eq!(owned, (200, "text/event-stream".to_string(), Err(Value::Null), vec![]), "a response came");
    // The session goes on.
    let reply = session.request("tools/call", json!({ "name": "net_ping", "arguments": { "domain": "net" } })).await;
    assert_eq!(reply.result()["structuredContent"]["pong"], true);
}

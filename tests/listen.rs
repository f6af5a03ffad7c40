//! `subscriptions/listen` (MCP 2026-07-28), as the conformance suite drives it — raw
//! streaming POSTs — against a server in this process: the acknowledgement first, with the
//! filter the server honours and the subscription id, then only the notifications the
//! stream asked for, each tagged with that id; the stream leaves the server when closed.

mod common;

use std::time::Duration;

use common::raw::ListenStream;
use common::serve_in_process;
use serde_json::{Value, json};
use toolgate::{Server, action};

/// Says hello to the caller. Does not remember anyone.
#[action(global)]
async fn listen_hello() -> Result<Greeting, toolgate::ToolError> {
    Ok(Greeting { greeting: "hello".into() })
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Greeting {
    greeting: String,
}

/// A browser page on loopback: allowed by the default origins; the owned path leaves a
/// request with an `Origin` to rmcp.
const TO_RMCP: (&str, &str) = ("Origin", "http://localhost:9");

#[tokio::test]
async fn a_listener_hears_what_it_asked_for_tagged_with_its_subscription() {
    let server = Server::from_registry("listen").build().unwrap();
    let url = serve_in_process(server.clone()).await;
    // The owned path holds a stream without an `Origin`; rmcp, one with.
    for headers in [&[][..], &[TO_RMCP][..]] {
        let mut tools = ListenStream::open(&url, 7, json!({ "toolsListChanged": true }), headers).await;
        let ack = tools.next(common::PATIENCE).await.expect("an acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
        assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }));

        // Prompts are not served: the filter the server acknowledges leaves them out.
        let mut prompts = ListenStream::open(&url, 8, json!({ "promptsListChanged": true }), headers).await;
        let ack = prompts.next(common::PATIENCE).await.expect("an acknowledgement");
        assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");

        // rmcp acknowledges a stream before the server registers it (the owned path registers
        // it first); either way a change told at once still reaches it.
        server.tools_changed().await;
        let changed = tools.next(common::PATIENCE).await.expect("list_changed on the tools stream");
        assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
        assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
        // The prompts stream asked for nothing the change is about. (The tools stream's
        // notification, sent after the prompts stream's turn, has arrived: this is no race.)
        assert_eq!(prompts.next(Duration::from_millis(300)).await, None);
        streams_come_to(&server, 2).await;

        drop(tools);
        drop(prompts);
        streams_come_to(&server, 0).await;
    }
}

/// Waits until `server` has `count` listening streams registered.
async fn streams_come_to(server: &Server, count: usize) {
    for _ in 0..250 {
        if server.listening_streams() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} streams registered, expected {count}", server.listening_streams());
}

#[tokio::test]
async fn a_session_server_started_sessionless_does_not_promise_list_changed_over_initialize() {
    let server = Server::from_registry("listen-sessionless").sessionless().build().unwrap();
    let url = serve_in_process(server).await;
    let reply = common::raw::initialize(&url, &[]).await;
    let result = reply.result();
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(result["capabilities"]["tools"].get("listChanged"), None, "{result}");
}

/// MCP 2026-07-28 over stdio: the tool list does not follow the conversation (the
/// specification forbids a list that changes as a side effect of other requests), so it is
/// byte-identical before and after a transition and no list change is told, on the stream
/// or elsewhere; closing stdin ends the stream and the server.
#[tokio::test]
async fn over_stdio_the_list_stays_put_and_eof_ends_the_listening_stream() {
    use tokio::io::AsyncWriteExt;
    let (mut child, mut stdin, mut lines) = common::spawn_stdio_example("invoice");
    let meta = common::raw::SessionlessClient::request_meta();
    let listen = json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": { "_meta": meta, "notifications": { "toolsListChanged": true } } });
    let submit = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "_meta": meta, "name": "invoice_submit", "arguments": { "domain": "invoice", "id": "INV-7" } } });
    let view = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "_meta": meta, "name": "invoice_view", "arguments": { "domain": "invoice", "id": "INV-7" } } });
    let list = |id: u64| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": { "_meta": meta } });
    let mut next = async || -> Value {
        let line = tokio::time::timeout(common::PATIENCE, lines.next_line()).await.expect("a message");
        serde_json::from_str(&line.unwrap().expect("stdout open")).unwrap()
    };
    stdin.write_all(format!("{listen}\n").as_bytes()).await.unwrap();
    let ack = next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    // rmcp sends the acknowledgement before the server's `listen` runs and registers the
    // stream (docs/upstream.md): a round trip first, so the stream is registered.
    let early = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "_meta": meta, "name": "invoice_view", "arguments": { "domain": "invoice", "id": "INV-8" } } });
    stdin.write_all(format!("{early}\n").as_bytes()).await.unwrap();
    assert_eq!(next().await["id"], 9);
    stdin.write_all(format!("{}\n", list(4)).as_bytes()).await.unwrap();
    let before = next().await;
    assert_eq!(before["id"], 4, "{before}");

    // The submit moves INV-7, which this connection names.
    stdin.write_all(format!("{submit}\n").as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    while !seen.iter().any(|m: &Value| m["id"] == 2) {
        seen.push(next().await);
    }
    assert_eq!(seen.last().unwrap()["result"]["structuredContent"]["state"], "review", "{seen:?}");
    // A round trip after the call, so that a notification still on its way has arrived.
    stdin.write_all(format!("{view}\n").as_bytes()).await.unwrap();
    while !seen.iter().any(|m: &Value| m["id"] == 3) {
        seen.push(next().await);
    }
    let changes: Vec<&Value> = seen.iter().filter(|m| m["method"] == "notifications/tools/list_changed").collect();
    assert!(changes.is_empty(), "a 2026-07-28 list changed with a call: {seen:?}");
    stdin.write_all(format!("{}\n", list(5)).as_bytes()).await.unwrap();
    let after = next().await;
    assert_eq!(after["id"], 5, "{after}");
    assert_eq!(before["result"].to_string(), after["result"].to_string(), "the list followed the submit");
    // Not `public`: what is listed depends on who asks (`invoice_amend` takes a scope that
    // stdio's clerk holds and an anonymous HTTP caller does not).
    assert_eq!(after["result"]["cacheScope"], "private", "{after}");
    let names: Vec<&str> =
        after["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"invoice_submit") && names.contains(&"invoice_approve"), "every tool: {names:?}");

    // End of input: the listening stream ends (its final result is written), and so does
    // the server.
    drop(stdin);
    let mut rest = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(common::PATIENCE, lines.next_line()).await {
        rest.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert!(rest.iter().any(|m| m["id"] == 1 && m["result"].is_object()), "the stream ended: {rest:?}");
    let status = tokio::time::timeout(common::PATIENCE, child.wait()).await.expect("the server exits at EOF");
    assert!(status.unwrap().success());
}

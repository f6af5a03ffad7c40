//! `subscriptions/listen` (MCP 2026-07-28), as the conformance suite drives it — raw
//! streaming POSTs — against a server in this process: the acknowledgement first, with the
//! filter the server honours and the subscription id, then only the notifications the
//! stream asked for, each tagged with that id; the stream leaves the server when closed.

mod common;

use std::time::Duration;

use common::raw::SessionlessClient;
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

/// One open listening stream: its SSE messages as they arrive.
struct Stream {
    response: reqwest::Response,
    pending: Vec<u8>,
}

impl Stream {
    async fn open(url: &str, id: u64, notifications: Value) -> Self {
        let mut params = json!({ "notifications": notifications });
        params["_meta"] = SessionlessClient::request_meta();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params });
        let response = reqwest::Client::new()
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        Self { response, pending: Vec::new() }
    }

    /// The next message on the stream, or `None` if none comes within `wait`.
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, async {
            loop {
                if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = self.pending.drain(..end + 2).collect();
                    let event = String::from_utf8(event).unwrap();
                    let data: String =
                        event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                    if !data.trim().is_empty() {
                        return serde_json::from_str(&data).unwrap();
                    }
                    continue;
                }
                let chunk = self.response.chunk().await.unwrap().expect("the stream ended");
                self.pending.extend_from_slice(&chunk);
            }
        })
        .await
        .ok()
    }
}

#[tokio::test]
async fn a_listener_hears_what_it_asked_for_tagged_with_its_subscription() {
    let server = Server::from_registry("listen").build().unwrap();
    let url = serve_in_process(server.clone()).await;

    let mut tools = Stream::open(&url, 7, json!({ "toolsListChanged": true })).await;
    let ack = tools.next(common::PATIENCE).await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }));

    // Prompts are not served: the filter the server acknowledges leaves them out.
    let mut prompts = Stream::open(&url, 8, json!({ "promptsListChanged": true })).await;
    let ack = prompts.next(common::PATIENCE).await.expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"], json!({}), "{ack}");

    // Both streams are registered once acknowledged.
    assert_eq!(server.listening_streams(), 2);
    server.tools_changed().await;
    let changed = tools.next(common::PATIENCE).await.expect("list_changed on the tools stream");
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    // The prompts stream asked for nothing the change is about. (The tools stream's
    // notification, sent after the prompts stream's turn, has arrived: this is no race.)
    assert_eq!(prompts.next(Duration::from_millis(300)).await, None);

    drop(tools);
    drop(prompts);
    for _ in 0..100 {
        if server.listening_streams() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("closed streams stayed registered: {}", server.listening_streams());
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

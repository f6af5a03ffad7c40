//! `subscriptions/listen` (MCP 2026-07-28), as the conformance suite drives it — raw
//! streaming POSTs — against a server in this process: the acknowledgement first, with the
//! filter the server honours and the subscription id, then only the notifications the
//! stream asked for, each tagged with that id; the stream leaves the server when closed.

mod common;

use std::time::Duration;

use common::raw::ListenStream;
use common::serve_in_process;
use serde_json::json;
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

#[tokio::test]
async fn a_listener_hears_what_it_asked_for_tagged_with_its_subscription() {
    let server = Server::from_registry("listen").build().unwrap();
    let url = serve_in_process(server.clone()).await;

    let mut tools = ListenStream::open(&url, 7, json!({ "toolsListChanged": true }), &[]).await;
    let ack = tools.next(common::PATIENCE).await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }));

    // Prompts are not served: the filter the server acknowledges leaves them out.
    let mut prompts = ListenStream::open(&url, 8, json!({ "promptsListChanged": true }), &[]).await;
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

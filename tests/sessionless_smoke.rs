//! Smoke tests of the raw sessionless (2026-07-28) client in `common::sessionless`, and of
//! rmcp's own client speaking that revision, against the invoice example over HTTP.

mod common;

use common::sessionless::{RawSession, SessionlessClient, spawn_http_example};
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

#[tokio::test]
async fn sessionless_requests_are_served() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let client = SessionlessClient::new(&url);

    let names = client.tool_names().await;
    assert!(names.iter().any(|name| name == "invoice_view"), "{names:?}");

    let (view, is_error) = client.call("invoice_view", inv("INV-1")).await;
    assert!(!is_error, "{view}");
    assert_eq!((view["id"].as_str(), view["domain"].as_str()), (Some("INV-1"), Some("invoice")));
    assert!(view["state"].is_string(), "{view}");

    // rmcp's default config streams even a single reply.
    let reply = client.call_with_headers("invoice_view", inv("INV-1"), &[]).await;
    assert_eq!(reply.status, 200);
    assert!(reply.is_sse(), "{}", reply.content_type);
    assert_eq!(reply.session_id, None);
    assert_eq!(reply.result()["structuredContent"]["id"], "INV-1");

    // A routing header that contradicts the body is refused before dispatch, as plain JSON.
    let reply = client.call_with_headers("invoice_view", inv("INV-1"), &[("Mcp-Name", "invoice_submit")]).await;
    assert_eq!(reply.status, 400);
    assert!(reply.is_json(), "{}", reply.content_type);
    assert_eq!(reply.error()["code"], -32020);

    // Missing `_meta.clientCapabilities`: 400 / -32602.
    let reply = client
        .request(
            "tools/call",
            json!({
                "name": "invoice_view",
                "arguments": inv("INV-1"),
                "_meta": { "io.modelcontextprotocol/clientCapabilities": null },
            }),
            &[],
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.error()["code"], -32602);
}

#[tokio::test]
async fn a_session_id_on_a_sessionless_request_is_accepted() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let session = RawSession::open(&url).await;
    assert!(!session.session_id().is_empty());
    let (view, is_error) = session.call("invoice_view", inv("INV-1")).await;
    assert!(!is_error, "{view}");
    assert_eq!(view["id"], "INV-1");

    let client = SessionlessClient::new(&url);
    let reply =
        client.call_with_headers("invoice_view", inv("INV-1"), &[("Mcp-Session-Id", session.session_id())]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.result()["structuredContent"]["id"], "INV-1");

    // The session itself still works, and ends on DELETE.
    assert_eq!(session.call("invoice_view", inv("INV-1")).await.0["id"], "INV-1");
    assert_eq!(session.close().await, 202);
}

/// rmcp's client speaks 2026-07-28 when started with the discover lifecycle.
#[tokio::test]
async fn rmcp_client_speaks_sessionless_with_the_discover_lifecycle() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let transport = StreamableHttpClientTransport::from_uri(url);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = ().serve_with_lifecycle(transport, lifecycle).await.expect("server/discover");
    assert_eq!(client.peer_info().map(|info| info.protocol_version.clone()), Some(ProtocolVersion::V_2026_07_28));

    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "invoice_view"));
    let Value::Object(arguments) = inv("INV-1") else { unreachable!() };
    let result = client
        .call_tool(CallToolRequestParams::new("invoice_view").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_eq!(result.structured_content.expect("structuredContent")["id"], "INV-1");
    client.cancel().await.expect("close");
}

//! The protocol's own answers, through the invoice example: a body or a line that is not
//! one well-formed JSON-RPC message gets the specification's error (HTTP 400 with `-32700`
//! or `-32600`; the same errors on stdio, where rmcp would not answer at all), a call with
//! wrong params gets `-32602` saying which member, a member named twice is refused before
//! any handler could read one of its values, and a session's DELETE answers 200.

use crate::common;

use crate::common::raw::{RawSession, SessionlessClient};
use crate::common::spawn_http_example;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const PAY_TWICE: &str = r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"invoice_submit","arguments":{"domain":"invoice","id":"INV-1","id":"INV-2"}}}"#;

fn deep_call() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"invoice_view","arguments":{{"domain":"invoice","id":{}"INV-1"{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    )
}

#[tokio::test]
async fn malformed_bodies_get_400_with_the_json_rpc_error_and_reach_no_handler() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let session = RawSession::open(&url).await;
    let deep = deep_call();
    for (body, code) in [
        ("", -32700),
        ("not json", -32700),
        (r#"{"jsonrpc":"2.0","id":40,"#, -32700),
        (PAY_TWICE, -32700),
        (deep.as_str(), -32700),
        ("[]", -32600),
        (r#"[{"jsonrpc":"2.0","id":43,"method":"ping"}]"#, -32600),
        (r#""tools/list""#, -32600),
        (r#"{"jsonrpc":"2.0","id":44,"method":"tools/call","params":[1]}"#, -32600),
    ] {
        let reply = session.post_raw(body, 0).await;
        assert_eq!(reply.status, 400, "{body:.60}: {:?}", reply.body);
        assert!(reply.is_json(), "{body:.60}: {}", reply.content_type);
        let error = reply.error();
        assert_eq!(error["code"], code, "{body:.60}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(!message.contains("deserialize") && !message.contains("expected"), "serde's text: {message}");
    }
    // The duplicate `id` reached no handler: INV-1 and INV-2 are both still drafts.
    for id in ["INV-1", "INV-2"] {
        let (view, _) = session.call("invoice_view", json!({ "domain": "invoice", "id": id })).await;
        assert_eq!(view["state"], "draft", "{id}: {view}");
    }
    // The batch's id is not answered as a request; a single message with an id is echoed.
    let reply = session.post_raw(r#"{"jsonrpc":"2.0","id":45,"method":"tools/call","params":"x"}"#, 45).await;
    assert_eq!(reply.error()["code"], -32600);
    let reply = session.post_raw(r#"{"jsonrpc":"2.0","id":46,"method":"tools/call","params":"x"}"#, 46).await;
    let body: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(body["id"], 46);
}

#[tokio::test]
async fn wrong_call_params_are_invalid_params_saying_which_member() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let session = RawSession::open(&url).await;
    for (params, says) in [
        (Value::Null, "params must be an object"),
        (json!({ "arguments": {} }), "`name` is required"),
        (json!({ "name": 7 }), "`name` must be a string"),
        (json!({ "name": "invoice_view", "arguments": [1] }), "`arguments` must be an object"),
    ] {
        let error = session.request("tools/call", params.clone()).await.error();
        assert_eq!(error["code"], -32602, "{params}: {error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{params}: {error}");
    }
    let error = session.request("no/such/method", json!({})).await.error();
    assert_eq!((error["code"].as_i64(), error["message"].as_str()), (Some(-32601), Some("Method not found")));

    // Sessionless (2026-07-28): the same -32602 (rather than rmcp's 404 for a method it
    // does not know), and an unknown method is 404 with -32601.
    let client = SessionlessClient::new(&url);
    let mut params = json!({ "name": "invoice_view", "arguments": [1] });
    params["_meta"] = SessionlessClient::request_meta();
    let reply = client.request("tools/call", params, &[("Mcp-Name", "invoice_view")]).await;
    assert_ne!(reply.status, 404);
    assert_eq!(reply.error()["code"], -32602);
    let mut params = json!({});
    params["_meta"] = SessionlessClient::request_meta();
    let reply = client.request("no/such/method", params, &[]).await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.error()["code"], -32601);
    // The methods 2026-07-28 removed do not exist there, whatever their params.
    for removed in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"] {
        let reply = client.request(removed, json!({}), &[]).await;
        assert_eq!(reply.status, 404, "{removed}");
        assert_eq!(reply.error()["code"], -32601, "{removed}");
    }
}

#[tokio::test]
async fn deleting_a_session_answers_200_and_ends_it() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let session = RawSession::open(&url).await;
    let id = session.session_id().to_string();
    assert_eq!(session.close().await, 200);
    let http = reqwest::Client::new();
    let after = http
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 404, "the deleted session still answers");
}

/// stdio: every line gets an answer — the malformed ones their error (rmcp would drop an
/// unparsable line, leaving its request unanswered forever), then the session goes on.
#[tokio::test]
async fn malformed_stdio_lines_are_answered_and_the_session_goes_on() {
    let (_child, mut stdin, mut replies) = common::spawn_stdio_example("invoice");
    let mut exchange = async |line: &str| -> Value {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let reply = tokio::time::timeout(common::PATIENCE, replies.next_line()).await.expect("no answer");
        serde_json::from_str(&reply.unwrap().expect("stdout closed")).unwrap()
    };
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } },
    });
    assert!(exchange(&initialize.to_string()).await["result"]["protocolVersion"].is_string());
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let deep = deep_call();
    // A notification is never answered: send it ahead of the first malformed line.
    let first = format!("{initialized}\nnot json");
    for (line, code) in [
        (first.as_str(), -32700),
        (PAY_TWICE, -32700),
        (deep.as_str(), -32700),
        ("[]", -32600),
        (r#"{"foo":1}"#, -32600),
    ] {
        let reply = exchange(line).await;
        assert_eq!((reply["error"]["code"].as_i64(), &reply["id"]), (Some(code), &Value::Null), "{line:.60}: {reply}");
    }
    let bad_params = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#;
    let reply = exchange(bad_params).await;
    assert_eq!((reply["id"].as_i64(), reply["error"]["code"].as_i64()), (Some(7), Some(-32602)), "{reply}");
    let view = json!({
        "jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": { "name": "invoice_view", "arguments": { "domain": "invoice", "id": "INV-1" } },
    });
    let reply = exchange(&view.to_string()).await;
    assert_eq!(reply["result"]["structuredContent"]["state"], "draft", "{reply}");
}

/// `params._meta` that is not an object, and a `taskId` that is not a string, are invalid
/// params (`-32602`) with the request's id, answered by the front (HTTP 400, JSON) in a
/// session and without one, never rmcp's 415 with serde's text or a `-32601`.
#[tokio::test]
async fn a_meta_or_task_id_of_the_wrong_type_is_invalid_params() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let session = RawSession::open(&url).await;
    let view = r#""name":"invoice_view","arguments":{"domain":"invoice","id":"INV-1"}"#;
    for (id, meta) in [(50, "[]"), (51, "1"), (52, r#""x""#), (53, "true")] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{view},"_meta":{meta}}}}}"#);
        let reply = session.post_raw(&body, id).await;
        assert_eq!((reply.status.as_u16(), reply.is_json()), (400, true), "_meta {meta}: {:?}", reply.body);
        let body: Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(body["id"], id, "{body}");
        let error = &body["error"];
        assert_eq!(error["code"], -32602, "_meta {meta}: {error}");
        assert!(error["message"].as_str().unwrap().contains("`params._meta` must be an object"), "{error}");
    }
    for (id, task_id) in [(54, "5"), (55, "null"), (56, r#"["t"]"#), (57, "{}")] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/get","params":{{"taskId":{task_id}}}}}"#);
        let reply = session.post_raw(&body, id).await;
        assert_eq!((reply.status.as_u16(), reply.is_json()), (400, true), "taskId {task_id}: {:?}", reply.body);
        let body: Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!((body["id"].as_u64(), body["error"]["code"].as_i64()), (Some(id), Some(-32602)), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("`params.taskId` must be a string"), "{body}");
    }
    // Without a session (2026-07-28), the same.
    let client = SessionlessClient::new(&url);
    let reply = client.request("tasks/get", json!({ "taskId": 5 }), &[]).await;
    assert_eq!((reply.status.as_u16(), reply.error()["code"].as_i64()), (400, Some(-32602)));
    // The session goes on.
    let (viewed, _) = session.call("invoice_view", json!({ "domain": "invoice", "id": "INV-1" })).await;
    assert_eq!(viewed["state"], "draft");
}

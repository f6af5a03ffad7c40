//! The owned path: a `tools/call` or `tools/list` of MCP 2026-07-28 that toolgate answers
//! itself, without rmcp's service, must answer exactly as rmcp's does. Each request is sent
//! twice: as clients send it (the owned path's), and with an allowed `Origin` header, which
//! the owned path leaves to rmcp; the two replies must have the same status, media type and
//! JSON-RPC message. The server's `toolgate_owned_requests_total` shows which path served
//! (so a test cannot pass because the owned path silently declined everything).
//!
//! Run `cargo build --workspace --examples` before `cargo test -p toolgate --test integration owned_path::`.

use crate::common;

use crate::common::raw::{Reply, SessionlessClient};
use serde_json::{Value, json};

/// A browser page on loopback: allowed by the default origins, and judged by rmcp only.
const TO_RMCP: (&str, &str) = ("Origin", "http://localhost:9");

/// A free loopback address for `--metrics`.
fn free_address() -> String {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    free.local_addr().unwrap().to_string()
}

/// The count of requests of `method` the owned path answered, from the server's metrics.
async fn owned_count(metrics: &str, method: &str) -> u64 {
    let text = reqwest::get(format!("http://{metrics}/metrics")).await.unwrap().text().await.unwrap();
    let line = format!("toolgate_owned_requests_total{{method=\"{method}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.trim().parse().unwrap())
}

/// What two replies must share: status, media type, the message (the id aside: each
/// request has its own) and the messages before it.
fn comparable(reply: &Reply) -> (u16, String, Result<Value, Value>, Vec<Value>) {
    (reply.status.as_u16(), reply.content_type.clone(), reply.message.clone(), reply.before.clone())
}

async fn both(client: &SessionlessClient, method: &str, params: Value) -> (Reply, Reply) {
    let owned = client.request(method, params.clone(), &[]).await;
    let rmcp = client.request(method, params, &[TO_RMCP]).await;
    (owned, rmcp)
}

/// The invoice example's calls — a read, a refusal by state, bad arguments, a transition,
/// a grouped call's refusal — and its list: the same through both paths.
#[tokio::test]
async fn the_owned_path_answers_as_rmcp_does() {
    for exposition in ["flat", "grouped"] {
        let metrics = free_address();
        let args = ["--stateless", "--exposition", exposition, "--metrics", &metrics];
        let (_server, url) = common::spawn_http_example("invoice", &args, &[]).await;
        let client = SessionlessClient::new(&url);
        let call = |tool: &str, action: Option<&str>, arguments: Value| {
            let mut arguments = arguments;
            let name = match (exposition, action) {
                ("grouped", Some(action)) => {
                    arguments["action"] = json!(action);
                    "invoice".to_string()
                }
                _ => tool.to_string(),
            };
            json!({ "name": name, "arguments": arguments })
        };
        let requests = [
            call("invoice_view", Some("view"), json!({ "id": "INV-1", "domain": "invoice" })),
            call("invoice_approve", Some("approve"), json!({ "id": "INV-1", "domain": "invoice" })),
            call("invoice_amend", Some("amend"), json!({ "id": 7, "domain": "invoice", "amount": "x" })),
            call("invoice_view", Some("nothing"), json!({ "id": "INV-1", "domain": "invoice" })),
        ];
        let mut owned_calls = 0;
        for params in requests {
            let (owned, rmcp) = both(&client, "tools/call", params.clone()).await;
            assert_eq!(comparable(&owned), comparable(&rmcp), "{exposition} {params}: owned, then rmcp");
            assert!(owned.is_json(), "{}", owned.body);
            owned_calls += 1;
        }
        // A transition: two fresh invoices, one through each path, alike but for the id (the
        // example's amounts repeat every 997 invoices).
        let (first, second) = if exposition == "flat" { ("INV-7001", "INV-7998") } else { ("INV-8001", "INV-8998") };
        let submit = |id: &str| call("invoice_submit", Some("submit"), json!({ "id": id, "domain": "invoice" }));
        let owned = client.request("tools/call", submit(first), &[]).await;
        let rmcp = client.request("tools/call", submit(second), &[TO_RMCP]).await;
        owned_calls += 1;
        let owned_text = serde_json::to_string(&comparable(&owned)).unwrap();
        let rmcp_text = serde_json::to_string(&comparable(&rmcp)).unwrap();
        let owned_text = owned_text.replace(first, second);
        assert_eq!(owned_text, rmcp_text, "{exposition}: a transition");
        assert!(owned_text.contains(r#"\"state\":\"review\""#), "{owned_text}");

        let (owned, rmcp) = both(&client, "tools/list", json!({})).await;
        assert_eq!(comparable(&owned), comparable(&rmcp), "{exposition}: tools/list");
        assert_eq!(owned.message.as_ref().unwrap()["ttlMs"], 0, "{}", owned.body);

        assert_eq!(owned_count(&metrics, "tools/call").await, owned_calls, "{exposition}: owned calls");
        assert_eq!(owned_count(&metrics, "tools/list").await, 1, "{exposition}: owned lists");
    }
}

/// Messages a call causes before its result — log lines the request asked for in
/// `_meta`, progress against its token — make the reply an event stream, the messages
/// first, through both paths; and a request the owned path does not serve (a session
/// server's 2026-07-28 request with a `requestState` to open) is rmcp's.
#[tokio::test]
async fn messages_before_the_result_stream_as_rmcp_streams_them() {
    let metrics = free_address();
    let (_server, url) = common::spawn_http_example("conformance", &["--metrics", &metrics], &[]).await;
    let client = SessionlessClient::new(&url);
    let meta = |extra: Value| {
        let mut meta = SessionlessClient::request_meta();
        meta.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        meta
    };
    let logging = json!({
        "name": "test_tool_with_logging", "arguments": {},
        "_meta": meta(json!({ "io.modelcontextprotocol/logLevel": "info" })),
    });
    let progress = json!({
        "name": "test_tool_with_progress", "arguments": {},
        "_meta": meta(json!({ "progressToken": "p-1" })),
    });
    for params in [logging, progress] {
        let (owned, rmcp) = both(&client, "tools/call", params.clone()).await;
        assert!(owned.is_sse(), "{params}: {}", owned.content_type);
        assert_eq!(owned.before.len(), 3, "{params}: {:?}", owned.before);
        assert_eq!(comparable(&owned), comparable(&rmcp), "{params}");
        // A proxy must not hold the stream back (issue 34 §6: the owned path's lacked it).
        let buffering = |reply: &Reply| reply.headers.get("x-accel-buffering").map(|v| v.to_str().unwrap().to_string());
        assert_eq!((buffering(&owned), buffering(&rmcp)), (Some("no".into()), Some("no".into())), "{params}");
    }
    let quiet = json!({ "name": "test_tool_with_logging", "arguments": {} });
    let (owned, rmcp) = both(&client, "tools/call", quiet).await;
    assert!(owned.is_json() && owned.before.is_empty(), "no log level asked: no messages");
    assert_eq!(comparable(&owned), comparable(&rmcp));
    assert_eq!(owned_count(&metrics, "tools/call").await, 3);

    let sealed = json!({ "name": "test_tool_with_logging", "arguments": {}, "requestState": "forged" });
    let refused = client.request("tools/call", sealed, &[]).await;
    assert_eq!(refused.error()["data"]["code"], "INVALID_REQUEST_STATE");
    assert_eq!(owned_count(&metrics, "tools/call").await, 3, "a requestState is rmcp's to open");
}

/// A session's calls (MCP 2025-11-25): the owned path serves those of tools whose handler
/// cannot send the client requests, on the session's own flow. The reply is the same
/// message, with the same messages before it (a transition's `list_changed`), as rmcp's.
/// rmcp streams every reply; the owned path writes one JSON body when nothing comes first.
/// The session stays the same session: its list follows its own calls, whichever path
/// served them.
#[tokio::test]
async fn a_sessions_calls_are_answered_as_rmcp_answers_them() {
    use common::raw::RawSession;
    let metrics = free_address();
    let (_server, url) = common::spawn_http_example("invoice", &["--metrics", &metrics], &[]).await;
    let session = RawSession::open(&url).await;
    let shared = |reply: &Reply| (reply.status.as_u16(), reply.message.clone(), reply.before.clone());
    let call = |tool: &str, id: &str| json!({ "name": tool, "arguments": { "id": id, "domain": "invoice" } });

    let both = |params: Value| {
        let session = &session;
        async move {
            let owned = session.request("tools/call", params.clone()).await;
            let rmcp = session.request_with_headers("tools/call", params, &[TO_RMCP]).await;
            (owned, rmcp)
        }
    };
    for params in [call("invoice_view", "INV-1"), call("invoice_approve", "INV-1")] {
        let (owned, rmcp) = both(params.clone()).await;
        assert_eq!(shared(&owned), shared(&rmcp), "{params}");
        assert!(owned.is_json(), "{params}: nothing before the result");
    }
    // A transition on the session's instance changes its list: `list_changed` comes first,
    // on the call's own stream, through either path.
    let owned = session.request("tools/call", call("invoice_submit", "INV-7001")).await;
    assert!(owned.is_sse(), "{}", owned.content_type);
    assert_eq!(owned.before, [json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })]);
    assert_eq!(owned.message.as_ref().unwrap()["structuredContent"]["state"], "review");
    let names = session.tool_names().await;
    assert!(names.contains(&"invoice_approve".to_string()), "the list follows the owned call: {names:?}");
    let rmcp = session.request_with_headers("tools/call", call("invoice_approve", "INV-7001"), &[TO_RMCP]).await;
    assert_eq!(rmcp.message.as_ref().unwrap()["structuredContent"]["state"], "approved", "{}", rmcp.body);
    assert_eq!(rmcp.before.len(), 1, "{:?}", rmcp.before);

    assert_eq!(owned_count(&metrics, "tools/call").await, 3, "the session's calls without an Origin");
}

/// Issue 57, item 4: a listening stream of MCP 2026-07-28 is held open by the owned path,
/// not by an rmcp service of its own. Two streams alike, one through each path, must hear
/// the same messages: the acknowledgement (an unknown URI dropped from it), an instance's
/// move on a resource it listens to, and, when the server stops, the request's final
/// result. Then each stream ends.
#[tokio::test]
async fn a_listening_stream_is_served_as_rmcp_serves_it() {
    use crate::common::raw::ListenStream;
    let metrics = free_address();
    let args = ["--metrics", &metrics, "--drain-delay", "1ms"];
    let (server, url) = common::spawn_http_example("invoice", &args, &[]).await;
    let receipt = "invoice://INV-7101/receipt";
    let asked = json!({ "toolsListChanged": true, "resourceSubscriptions": [receipt, "nowhere://x"] });
    let mut owned = ListenStream::open(&url, 7, asked.clone(), &[]).await;
    let mut rmcp = ListenStream::open(&url, 7, asked, &[TO_RMCP]).await;
    let mut next = async |what: &str| {
        let owned = owned.next(common::PATIENCE).await.unwrap_or_else(|| panic!("{what} on the owned stream"));
        let rmcp = rmcp.next(common::PATIENCE).await.unwrap_or_else(|| panic!("{what} on rmcp's stream"));
        assert_eq!(owned, rmcp, "{what}: owned, then rmcp");
        owned
    };
    let acknowledged = next("the acknowledgement").await;
    assert_eq!(acknowledged["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(acknowledged["params"]["notifications"]["resourceSubscriptions"], json!([receipt]));
    assert_eq!(owned_count(&metrics, "subscriptions/listen").await, 1, "the stream without an Origin");

    let client = SessionlessClient::new(&url);
    let submit = json!({ "name": "invoice_submit", "arguments": { "id": "INV-7101", "domain": "invoice" } });
    client.request("tools/call", submit, &[]).await.result();
    let updated = next("the receipt's update").await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], receipt);
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);

    crate::shutdown::signal(&server, "TERM");
    let last = next("the final result").await;
    assert_eq!(last["id"], 7, "{last}");
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "{last}");
    assert!(owned.ended(common::PATIENCE).await && rmcp.ended(common::PATIENCE).await, "both streams end");
}

/// Issue 34 §6: an id of `-0` is valid JSON; rmcp echoes it as `0`, and so does the owned
/// path now (it echoed `-0`). The bodies must be byte-identical.
#[tokio::test]
async fn an_id_of_negative_zero_is_echoed_alike() {
    let (_server, url) = common::spawn_http_example("conformance", &["--stateless"], &[]).await;
    let meta = SessionlessClient::request_meta();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{{"name":"greet","arguments":{{"name":"Zero"}},"_meta":{meta}}}}}"#
    );
    let mut replies = Vec::new();
    for origin in [None, Some(TO_RMCP)] {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", common::raw::SESSIONLESS_VERSION)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "greet")
            .body(body.clone());
        if let Some((name, value)) = origin {
            request = request.header(name, value);
        }
        let reply = request.send().await.unwrap();
        replies.push((reply.status().as_u16(), reply.text().await.unwrap()));
    }
    assert_eq!(replies[0], replies[1], "owned, then rmcp");
    assert!(replies[0].1.contains(r#""id":0,"#), "{}", replies[0].1);
}

/// One request of the differential corpus: what it varies, its body, its headers, and the
/// id to read its reply by (numeric ids; `0` for the rest, answered as JSON).
struct Variant {
    what: String,
    body: String,
    headers: Vec<(&'static str, String)>,
    id: u64,
}

/// The corpus: from one well-formed sessionless `invoice_view` call, every variant changes
/// one thing — the id (every JSON type, escapes, extremes), the tool's name, the
/// arguments, `_meta`'s shape and members, a header's value, casing or repetition, the
/// `Accept` and `Content-Type` values, the method, the body's spacing.
fn corpus() -> Vec<Variant> {
    const META: &str =
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    const ARGS: &str = r#"{"id":"INV-1","domain":"invoice"}"#;
    let call = |id: &str, name: &str, arguments: &str, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{name},"arguments":{arguments},"_meta":{meta}}}}}"#
        )
    };
    let headers = |name: &str| -> Vec<(&'static str, String)> {
        vec![
            ("MCP-Protocol-Version", "2026-07-28".into()),
            ("Mcp-Method", "tools/call".into()),
            ("Mcp-Name", name.to_string()),
        ]
    };
    let mut corpus = Vec::new();
    let mut add = |what: String, body: String, headers: Vec<(&'static str, String)>, id: u64| {
        corpus.push(Variant { what, body, headers, id });
    };
    let long = format!("\"{}\"", "x".repeat(300));
    let ids = [
        "1",
        "0",
        "-1",
        "-0",
        "9007199254740993",
        "9223372036854775807",
        "18446744073709551615",
        "1.0",
        "1e2",
        "1.5",
        r#""a""#,
        r#""""#,
        r#""\u00e9""#,
        r#""é""#,
        r#""\\""#,
        r#""a\"b""#,
        r#""\ud83d\ude00""#,
        r#""\u0000""#,
        long.as_str(),
        "null",
        "true",
        "[]",
        "{}",
        "[1]",
    ];
    for id in ids {
        let read = id.parse::<u64>().unwrap_or(0);
        add(format!("id {id:.40}"), call(id, r#""invoice_view""#, ARGS, META), headers("invoice_view"), read);
    }
    for (name, header) in [
        (r#""invoice\u005fview""#, "invoice_view"),
        (r#""invoice_nope""#, "invoice_nope"),
        (r#""""#, ""),
        (r#""INVOICE_VIEW""#, "INVOICE_VIEW"),
        (r#""invoice_approve""#, "invoice_approve"),
        (r#""invoice_view ""#, "invoice_view "),
    ] {
        add(format!("name {name}"), call("2", name, ARGS, META), headers(header), 2);
    }
    for arguments in [
        "{}",
        r#"{"domain":"invoice"}"#,
        r#"{"id":"INV-1"}"#,
        r#"{"id":7,"domain":"invoice"}"#,
        r#"{"id":"INV-1","domain":"invoice","extra":1}"#,
        r#"{"id":"INV-1","domain":"payments"}"#,
        r#"{"id":"INV-\u0031","domain":"invoice"}"#,
        r#"{"id":"INV-99999999999999999999","domain":"invoice"}"#,
        r#"{"id":"","domain":"invoice"}"#,
        "null",
        "[]",
        r#""x""#,
        "7",
    ] {
        add(
            format!("arguments {arguments}"),
            call("3", r#""invoice_view""#, arguments, META),
            headers("invoice_view"),
            3,
        );
    }
    let metas = [
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"nonsense"}"#,
        r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x/y":1}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
        "{}",
        "null",
        "[]",
        r#""meta""#,
        "3",
    ];
    for meta in metas {
        add(format!("_meta {meta:.80}"), call("4", r#""invoice_view""#, ARGS, meta), headers("invoice_view"), 4);
    }
    let base = call("5", r#""invoice_view""#, ARGS, META);
    let with = |replace: &str, value: &str| -> Vec<(&'static str, String)> {
        let mut h = headers("invoice_view");
        h.retain(|(name, _)| !name.eq_ignore_ascii_case(replace));
        let name: &'static str = Box::leak(replace.to_string().into_boxed_str());
        if !value.is_empty() {
            h.push((name, value.to_string()));
        }
        h
    };
    let header_variants: Vec<(String, Vec<(&'static str, String)>)> = vec![
        ("Mcp-Method tools/list".into(), with("Mcp-Method", "tools/list")),
        ("Mcp-Method absent".into(), with("Mcp-Method", "")),
        ("Mcp-Name another tool".into(), with("Mcp-Name", "invoice_pay")),
        ("Mcp-Name absent".into(), with("Mcp-Name", "")),
        ("MCP-Protocol-Version 2025-11-25".into(), with("MCP-Protocol-Version", "2025-11-25")),
        ("MCP-Protocol-Version absent".into(), with("MCP-Protocol-Version", "")),
        ("MCP-Protocol-Version nonsense".into(), with("MCP-Protocol-Version", "latest")),
        (
            "lower-case names".into(),
            headers("invoice_view")
                .into_iter()
                .map(|(n, v)| (&*Box::leak(n.to_lowercase().into_boxed_str()), v))
                .collect(),
        ),
        (
            "upper-case names".into(),
            headers("invoice_view")
                .into_iter()
                .map(|(n, v)| (&*Box::leak(n.to_uppercase().into_boxed_str()), v))
                .collect(),
        ),
        ("Mcp-Name twice, alike".into(), {
            let mut h = headers("invoice_view");
            h.push(("Mcp-Name", "invoice_view".into()));
            h
        }),
        ("Mcp-Name twice, unlike".into(), {
            let mut h = headers("invoice_view");
            h.push(("Mcp-Name", "invoice_pay".into()));
            h
        }),
        ("Mcp-Method twice, unlike".into(), {
            let mut h = headers("invoice_view");
            h.push(("Mcp-Method", "tools/list".into()));
            h
        }),
        ("MCP-Protocol-Version twice".into(), {
            let mut h = headers("invoice_view");
            h.push(("MCP-Protocol-Version", "2026-07-28".into()));
            h
        }),
        ("Accept application/json".into(), with("Accept", "application/json")),
        ("Accept text/event-stream".into(), with("Accept", "text/event-stream")),
        ("Accept */*".into(), with("Accept", "*/*")),
        ("Accept reversed".into(), with("Accept", "text/event-stream, application/json")),
        ("Accept with q".into(), with("Accept", "application/json;q=0.9, text/event-stream;q=0.1")),
        ("Accept text/html".into(), with("Accept", "text/html")),
        ("Content-Type with charset".into(), with("Content-Type", "application/json; charset=utf-8")),
        ("Content-Type upper case".into(), with("Content-Type", "Application/JSON")),
        ("Content-Type text/plain".into(), with("Content-Type", "text/plain")),
        ("Content-Type json+x".into(), with("Content-Type", "application/json-seq")),
    ];
    for (what, headers) in header_variants {
        add(format!("headers: {what}"), base.clone(), headers, 5);
    }
    let list =
        |id: &str, params: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{params}}}"#);
    let list_headers =
        vec![("MCP-Protocol-Version", "2026-07-28".to_string()), ("Mcp-Method", "tools/list".to_string())];
    for (what, params) in [
        ("tools/list", format!(r#"{{"_meta":{META}}}"#)),
        ("tools/list with a cursor", format!(r#"{{"cursor":"x","_meta":{META}}}"#)),
        ("tools/list without _meta", "{}".to_string()),
    ] {
        add(what.to_string(), list("6", &params), list_headers.clone(), 6);
    }
    let spaced = format!(
        "{{ \"jsonrpc\" : \"2.0\" ,\n \"id\" : 7 ,\r\n \"method\" : \"tools/call\" , \"params\" : {{ \"name\" : \"invoice_view\" , \"arguments\" : {ARGS} , \"_meta\" : {META} }} }}\n"
    );
    add("spaced body".into(), spaced, headers("invoice_view"), 7);
    let reordered = format!(
        r#"{{"params":{{"_meta":{META},"arguments":{ARGS},"name":"invoice_view"}},"method":"tools/call","id":8,"jsonrpc":"2.0"}}"#
    );
    add("members reordered".into(), reordered, headers("invoice_view"), 8);
    corpus
}

/// The differences between the paths that are deliberate, each with its reason. Empty:
/// the corpus found none.
const DELIBERATE: [(&str, &str); 0] = [];

/// What two replies must share for the corpus: status, media type, the headers that
/// matter to a client, the message and what came before it.
fn shape(reply: &Reply) -> String {
    let header = |name: &str| reply.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("-").to_string();
    let message = match &reply.message {
        Err(Value::String(body)) => Err(Value::String(body.clone())),
        other => other.clone(),
    };
    format!(
        "{} {} cache-control={} x-accel-buffering={} www-authenticate={} retry-after={} session={} {:?} {:?}",
        reply.status.as_u16(),
        reply.content_type,
        header("cache-control"),
        header("x-accel-buffering"),
        header("www-authenticate"),
        header("retry-after"),
        reply.session_id.is_some(),
        message,
        reply.before
    )
}

/// Issue 34's differential test: every variant of the corpus goes through the owned path
/// (as sent) and through rmcp (the same with an allowed `Origin`), and the two replies
/// must agree, or the variant must be named in [`DELIBERATE`] with its reason. The server's
/// metrics show the owned path answered most of them (a corpus the owned path declined
/// would prove nothing).
#[tokio::test]
async fn a_corpus_of_request_variants_is_answered_alike_through_both_paths() {
    let metrics = free_address();
    let (_server, url) = common::spawn_http_example("invoice", &["--stateless", "--metrics", &metrics], &[]).await;
    let client = SessionlessClient::new(&url);
    let corpus = corpus();
    assert!(corpus.len() >= 85, "the corpus shrank to {}", corpus.len());
    let mut differences = Vec::new();
    for variant in &corpus {
        let headers: Vec<(&str, &str)> = variant.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let owned = client.post_raw(&variant.body, variant.id, &headers).await;
        let mut to_rmcp = headers.clone();
        to_rmcp.push(TO_RMCP);
        let rmcp = client.post_raw(&variant.body, variant.id, &to_rmcp).await;
        let (owned, rmcp) = (shape(&owned), shape(&rmcp));
        if owned != rmcp && !DELIBERATE.iter().any(|(what, _)| *what == variant.what) {
            differences.push(format!("{}:\n  owned {owned:.600}\n  rmcp  {rmcp:.600}", variant.what));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} variants differ:\n{}",
        differences.len(),
        corpus.len(),
        differences.join("\n")
    );
    let served = owned_count(&metrics, "tools/call").await + owned_count(&metrics, "tools/list").await;
    assert!(served >= 30, "the owned path answered only {served} of {} variants", corpus.len());
    eprintln!("differential corpus: {} variants, {served} answered by the owned path", corpus.len());
}

/// The same differential test on a session (MCP 2025-11-25): the corpus's ids, names and
/// arguments, without `_meta`'s 2026-07-28 members, on the session's own headers, through
/// the owned path and through rmcp; every reply must agree on its status, its message and
/// the messages before it. One difference is deliberate: a result with nothing before it
/// is one JSON body on the owned path, where rmcp's session answers an event stream of one
/// event (and its stream headers); MCP lets a server answer either, every client reads
/// both, and the body is the event's data, byte for byte.
#[tokio::test]
async fn a_sessions_variants_are_answered_alike_through_both_paths() {
    use common::raw::RawSession;
    let metrics = free_address();
    let (_server, url) = common::spawn_http_example("invoice", &["--metrics", &metrics], &[]).await;
    let session = RawSession::open(&url).await;
    let session_corpus: Vec<Variant> = corpus()
        .into_iter()
        .filter(|v| v.what.starts_with("id ") || v.what.starts_with("name ") || v.what.starts_with("arguments "))
        .map(|v| Variant {
            body: v.body.replace(
                r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#,
                "",
            ),
            ..v
        })
        .collect();
    assert!(session_corpus.len() >= 40, "{}", session_corpus.len());
    let mut differences = Vec::new();
    for variant in &session_corpus {
        let owned = session.post_raw(&variant.body, variant.id).await;
        let rmcp = session.post_raw_with_headers(&variant.body, variant.id, &[TO_RMCP]).await;
        let shared = |reply: &Reply| format!("{} {:?} {:?}", reply.status.as_u16(), reply.message, reply.before);
        let (owned, rmcp) = (shared(&owned), shared(&rmcp));
        if owned != rmcp {
            differences.push(format!("{}:\n  owned {owned:.600}\n  rmcp  {rmcp:.600}", variant.what));
        }
    }
    let count = session_corpus.len();
    assert!(differences.is_empty(), "{} of {count} variants differ:\n{}", differences.len(), differences.join("\n"));
    let served = owned_count(&metrics, "tools/call").await;
    assert!(served >= 10, "the owned path answered only {served} of {count} variants");
    eprintln!("differential corpus on a session: {count} variants, {served} answered by the owned path");
}

//! Defects found by attack (issue 22), each through the real transport against the invoice
//! example: what a request can make the server do grows no faster than the request, and
//! nothing a client can hold open without a token is held without bound.
//!
//! - a body of many members is refused with `-32600` after bounded work;
//! - ids rmcp cannot read, and bodies past the size limit, get JSON-RPC errors (never
//!   rmcp's 415 text), and a 401 echoes the refused request's id;
//! - an argument error lists at most twenty fields;
//! - listening streams are capped per server and per client;
//! - a request whose headers or body never finish is cut off, and one address holds a
//!   bounded number of connections;
//! - a secret given twice, or an empty tenant, stops the server at start-up.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::raw::{ListenStream, SESSIONLESS_VERSION, SessionlessClient};
use crate::common::{PATIENCE, spawn_http_example};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// POSTs `body` as a sessionless `method` request; the status and the body as JSON.
async fn post(
    url: &str,
    method: &str,
    body: String,
    headers: &[(&str, &str)],
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", SESSIONLESS_VERSION)
        .header("mcp-method", method)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let reply = tokio::time::timeout(PATIENCE, request.send()).await.expect("no answer").expect("POST");
    let status = reply.status().as_u16();
    let headers = reply.headers().clone();
    let text = reply.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status}: not JSON: {text:.200}"));
    (status, body, headers)
}

/// A sessionless `tools/list` whose `params` hold `members` distinct members.
fn list_with_members(id: Value, members: usize) -> String {
    let members: Vec<String> = (0..members).map(|i| format!(r#""m{i}":0"#)).collect();
    let meta = SessionlessClient::request_meta();
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{meta},{}}}}}"#, members.join(","))
}

/// D1: a body near the 4 MiB limit made of members is refused with `-32600` naming the
/// bound (the work it cost is counted, and bounded, in the wire check's unit tests), and
/// the server goes on answering.
#[tokio::test]
async fn a_body_of_members_is_an_invalid_request_and_the_server_goes_on() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let body = list_with_members(json!(7), 355_000);
    assert!(body.len() > 4_000_000 && body.len() < 4 * 1024 * 1024, "{}", body.len());
    let (status, reply, _) = post(&url, "tools/list", body, &[]).await;
    assert_eq!(status, 400, "{reply}");
    assert_eq!((reply["id"].as_i64(), reply["error"]["code"].as_i64()), (Some(7), Some(-32600)), "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("more than 1024 members"), "{reply}");
    let tools = SessionlessClient::new(&url).tool_names().await;
    assert!(tools.contains(&"invoice_view".to_string()), "{tools:?}");
}

/// D5: an id rmcp cannot read is `-32600` with 400 (rmcp answered 415 and its text); a
/// body past the limit is 413 with a JSON-RPC error.
#[tokio::test]
async fn odd_ids_and_large_bodies_get_json_rpc_errors() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let meta = SessionlessClient::request_meta();
    for id in ["1.5", "18446744073709551616", "123456789012345678901234567890"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{meta}}}}}"#);
        let (status, reply, _) = post(&url, "tools/list", body, &[]).await;
        assert_eq!((status, reply["error"]["code"].as_i64()), (400, Some(-32600)), "{id}: {reply}");
        assert!(reply["error"]["message"].as_str().unwrap().contains("`id` must be"), "{id}: {reply}");
    }
    let huge =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#, "x".repeat(5 << 20));
    let (status, reply, _) = post(&url, "tools/list", huge, &[]).await;
    assert_eq!((status, reply["error"]["code"].as_i64()), (413, Some(-32600)), "{reply}");
}

/// D5: a request refused for its credentials is answered with its own id.
#[tokio::test]
async fn a_refused_token_answers_the_request_s_id() {
    let args = ["--require-auth", "--token", "alice=alice-secret-0123456789"];
    let (_server, url) = spawn_http_example("invoice", &args, &[]).await;
    let meta = SessionlessClient::request_meta();
    let body = format!(r#"{{"jsonrpc":"2.0","id":"call-9","method":"tools/list","params":{{"_meta":{meta}}}}}"#);
    let (status, reply, _) = post(&url, "tools/list", body.clone(), &[]).await;
    assert_eq!((status, &reply["id"]), (401, &json!("call-9")), "{reply}");
    let (status, reply, _) = post(&url, "tools/list", body, &[("authorization", "Bearer wrong-0123456789")]).await;
    assert_eq!((status, &reply["id"]), (401, &json!("call-9")), "{reply}");
}

/// D7: a thousand unknown arguments get an answer listing twenty fields and a count, a
/// few kilobytes rather than a few hundred.
#[tokio::test]
async fn an_argument_error_lists_twenty_fields_and_counts_the_rest() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let mut arguments = json!({ "domain": "invoice", "id": "INV-1" });
    for i in 0..1_000 {
        arguments[format!("unknown_member_{i}")] = json!(i);
    }
    let reply = SessionlessClient::new(&url).call_with_headers("invoice_view", arguments, &[]).await;
    let size = reply.body.len();
    let result = reply.result();
    let error = &result["structuredContent"];
    assert_eq!(error["code"], "INVALID_ARGUMENT", "{error}");
    assert_eq!((error["errors"].as_array().unwrap().len(), error["more_errors"].as_u64()), (20, Some(980)));
    assert!(size < 16_000, "{size} bytes answered 1,000 unknown members");
}

/// Issue 34 §3: what an error says back of its input is bounded. An unknown argument's
/// name of a megabyte came back four times (message and `errors[].field`, text block and
/// `structuredContent`): 4 MB of request, 16 MB of answer. Now each name is cut short and
/// the whole answer is a few KB, whatever was sent.
#[tokio::test]
async fn an_error_says_back_a_bounded_amount_of_what_it_was_sent() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let long = "n".repeat(1_000_000);
    let mut arguments = json!({ "domain": "invoice", "id": "INV-1" });
    arguments[&long] = json!(1);
    arguments[format!("{long}2")] = json!(2);
    let reply = client.call_with_headers("invoice_view", arguments, &[]).await;
    let size = reply.body.len();
    let result = reply.result();
    let error = &result["structuredContent"];
    assert_eq!(error["code"], "INVALID_ARGUMENT", "{error:.300}");
    let field = error["errors"][0]["field"].as_str().unwrap();
    assert!(field.starts_with("/nnn") && field.ends_with('…') && field.len() < 200, "{field:.300}");
    assert!(size < 12_000, "{size} bytes answered a megabyte-long argument name");

    // A tool name is echoed by the refusal too (and carried in `Mcp-Name`, so 50 KB).
    let tool = "t".repeat(50_000);
    let reply = client.call_with_headers(&tool, json!({}), &[]).await;
    assert!(reply.body.len() < 12_000, "{} bytes answered a 50 KB tool name", reply.body.len());
}

/// Opens a listening stream: the status, and the reply and `Retry-After` if it was
/// refused, else the open stream.
async fn listen(url: &str, token: Option<&str>) -> (u16, Option<(Value, String)>, Option<reqwest::Response>) {
    let mut params = json!({ "notifications": { "toolsListChanged": true } });
    params["_meta"] = SessionlessClient::request_meta();
    let body = json!({ "jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": params });
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", SESSIONLESS_VERSION)
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = tokio::time::timeout(PATIENCE, request.send()).await.expect("no answer").expect("listen");
    let status = response.status().as_u16();
    if status == 200 {
        return (status, None, Some(response));
    }
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    let refused = (serde_json::from_str(&text).unwrap(), retry_after.unwrap_or_default());
    (status, Some(refused), None)
}

/// D8: listening streams are capped per client (an anonymous client is its address) and
/// per server; a refused stream gets 503 with `Retry-After`, and a closed one frees its place.
#[tokio::test]
async fn listening_streams_are_capped_per_client_and_per_server() {
    let args = [
        "--max-listen-streams",
        "3",
        "--max-client-streams",
        "2",
        "--token",
        "alice=alice-secret-0123456789",
        "--token",
        "bob=bob-secret-0123456789ab",
    ];
    let (_server, url) = spawn_http_example("invoice", &args, &[]).await;
    let first = ListenStream::open(&url, 1, json!({ "toolsListChanged": true }), &[]).await;
    let _second = ListenStream::open(&url, 2, json!({ "toolsListChanged": true }), &[]).await;
    let (status, refused, _) = listen(&url, None).await;
    let (reply, retry_after) = refused.expect("a third anonymous stream was opened");
    assert_eq!((status, reply["id"].as_i64(), retry_after.as_str()), (503, Some(5), "5"), "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("this client holds its maximum of 2"), "{reply}");

    // Alice is another client: she takes the server's last place; then Bob finds none.
    let (status, _, _alice) = listen(&url, Some("alice-secret-0123456789")).await;
    assert_eq!(status, 200);
    let (status, refused, _) = listen(&url, Some("bob-secret-0123456789ab")).await;
    assert_eq!(status, 503);
    assert!(refused.unwrap().0["error"]["message"].as_str().unwrap().contains("server holds its maximum of 3"));

    // A stream the client closes frees its place.
    drop(first);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, _, _bob) = listen(&url, Some("bob-secret-0123456789ab")).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the closed stream's place was never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether the server closed `connection`: a read ends (EOF or reset) within `wait`.
async fn closed_within(connection: &mut TcpStream, wait: Duration) -> bool {
    let mut buffer = [0u8; 1024];
    let read = async {
        loop {
            match connection.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(wait, read).await.is_ok()
}

fn address(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches("/mcp").to_string()
}

/// D9: a connection that sends no request, or a request whose headers never finish, is
/// cut off after the read timeout; one whose body never finishes gets 408 with a JSON-RPC
/// error.
#[tokio::test]
async fn a_request_that_never_finishes_is_cut_off() {
    let (_server, url) = spawn_http_example("invoice", &["--request-read-timeout", "1"], &[]).await;
    // The timeout counts from accept: a connection that sends nothing, or only the first
    // byte of HTTP/2's preface, is closed too (they were held forever).
    let mut silent = TcpStream::connect(address(&url)).await.unwrap();
    let mut one_byte = TcpStream::connect(address(&url)).await.unwrap();
    one_byte.write_all(b"P").await.unwrap();
    assert!(closed_within(&mut silent, PATIENCE).await, "a connection that sends nothing is held open");
    assert!(closed_within(&mut one_byte, PATIENCE).await, "a connection that sends one byte is held open");
    let mut slow = TcpStream::connect(address(&url)).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    assert!(closed_within(&mut slow, PATIENCE).await, "a request without the end of its headers is held open");

    let mut slow_body = TcpStream::connect(address(&url)).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"";
    slow_body.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(PATIENCE, async {
        let mut buffer = [0u8; 4096];
        loop {
            match slow_body.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            }
            if answer.windows(7).any(|w| w == b"-32600}") || answer.ends_with(b"}}") {
                break;
            }
        }
    });
    read.await.expect("a body that never finishes is waited for forever");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("-32600") && answer.contains("did not arrive within"), "{answer}");
}

/// D9: one address holds at most its cap of connections; a further one is closed at
/// once, while the others stay open, and when one ends another can connect.
#[tokio::test]
async fn one_address_holds_a_bounded_number_of_connections() {
    let (_server, url) = spawn_http_example("invoice", &["--max-client-connections", "4"], &[]).await;
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut connection = TcpStream::connect(address(&url)).await.unwrap();
        connection.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        held.push(connection);
    }
    // A round trip on a fresh connection would be refused too; the held ones are open.
    let mut fifth = TcpStream::connect(address(&url)).await.unwrap();
    assert!(closed_within(&mut fifth, PATIENCE).await, "a fifth connection from one address was kept");
    for connection in &mut held {
        assert!(!closed_within(connection, Duration::from_millis(100)).await, "a held connection was closed");
    }
    held.pop();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reply = reqwest::Client::new().get(&url).send().await;
        if reply.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no place was freed when a connection ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the invoice example with `args` until it exits; its exit status and stderr.
async fn start_with(args: &[&str]) -> (bool, String) {
    let run = tokio::process::Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--store", "memory"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE, run).await.expect("the server started instead of refusing").unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// D10 and D4: a secret given twice (the later would silently win) and an empty tenant
/// (served as none, sharing the default tenant) stop the server at start-up, naming both
/// entries and never the secret.
#[tokio::test]
async fn a_secret_given_twice_or_an_empty_tenant_stops_the_server() {
    let dir = std::env::temp_dir().join(format!("toolgate-hardening-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let twice = dir.join("twice.toml");
    std::fs::write(
        &twice,
        "[[token]]\nsecret = \"shared-secret-0123456789\"\nprincipal = \"alice\"\n\n\
         [[token]]\nsecret = \"bob-secret-0123456789ab\"\nprincipal = \"bob\"\n\n\
         [[token]]\nsecret = \"shared-secret-0123456789\"\nprincipal = \"mallory\"\ntenant = \"evil\"\n",
    )
    .unwrap();
    let path = twice.to_str().unwrap();
    let (started, stderr) = start_with(&["--tokens", path]).await;
    assert!(!started);
    assert!(stderr.contains("given twice") && stderr.contains("entry 1 (`alice`)"), "{stderr}");
    assert!(stderr.contains("entry 3 (`mallory`)") && !stderr.contains("shared-secret"), "{stderr}");

    let (started, stderr) =
        start_with(&["--token", "alice=same-secret-0123456789", "--token", "bob=same-secret-0123456789"]).await;
    assert!(!started);
    assert!(stderr.contains("given twice") && stderr.contains("`bob`") && !stderr.contains("same-secret"), "{stderr}");

    let empty = dir.join("empty-tenant.toml");
    std::fs::write(&empty, "[[token]]\nsecret = \"carol-secret-0123456789\"\nprincipal = \"carol\"\ntenant = \"\"\n")
        .unwrap();
    let (started, stderr) = start_with(&["--tokens", empty.to_str().unwrap()]).await;
    assert!(!started);
    assert!(stderr.contains("the `tenant` of `carol` is empty"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The 2026-07-28 listing rule: `tools/list` does not change as a side effect of other
/// requests — byte-identical before and after `switch_domain`, over HTTP and over stdio
/// (where it followed the conversation).
#[tokio::test]
async fn a_2026_list_is_the_same_before_and_after_switch_domain_over_http_and_stdio() {
    let switch = json!({ "domain": "bus", "reason": "the user wants a bus" });

    let (_server, url) = spawn_http_example("travel", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let before = client.request("tools/list", json!({}), &[]).await.result().to_string();
    let switched = client.call_with_headers("switch_domain", switch.clone(), &[]).await.result();
    assert_eq!(switched["isError"], false, "{switched}");
    let after = client.request("tools/list", json!({}), &[]).await.result().to_string();
    assert_eq!(before, after, "over HTTP");

    let (_child, mut stdin, mut lines) = common::spawn_stdio_example("travel");
    let meta = SessionlessClient::request_meta();
    let mut exchange = async |request: Value| -> Value {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        loop {
            let line = tokio::time::timeout(PATIENCE, lines.next_line()).await.expect("an answer").unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == request["id"] {
                return message;
            }
        }
    };
    let list = |id: u64| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": { "_meta": meta } });
    let before = exchange(list(1)).await["result"].to_string();
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "_meta": meta, "name": "switch_domain", "arguments": switch } });
    let switched = exchange(call).await;
    assert_eq!(switched["result"]["isError"], false, "{switched}");
    let after = exchange(list(3)).await["result"].to_string();
    assert_eq!(before, after, "over stdio");
}

/// Capabilities say what is served: the invoice example has no prompts, so discovery does
/// not declare them and `prompts/list` is a method it does not have (`-32601`), not `[]`.
#[tokio::test]
async fn a_capability_not_declared_is_a_method_not_found() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let discovered = client.request("server/discover", json!({}), &[]).await.result();
    let capabilities = &discovered["capabilities"];
    assert!(capabilities.get("prompts").is_none() && capabilities["resources"].is_object(), "{discovered}");
    for method in ["prompts/list", "prompts/get", "completion/complete"] {
        let params = match method {
            "prompts/get" => json!({ "name": "anything" }),
            "completion/complete" => {
                json!({ "ref": { "type": "ref/prompt", "name": "x" }, "argument": { "name": "a", "value": "" } })
            }
            _ => json!({}),
        };
        let error = client.request(method, params, &[]).await.error();
        assert_eq!(error["code"], -32601, "{method}: {error}");
    }
    let templates = client.request("resources/templates/list", json!({}), &[]).await.result();
    assert!(templates["resourceTemplates"].as_array().is_some_and(|t| !t.is_empty()), "{templates}");
}

/// A session refused past the cap is expected traffic: logged once per interval with a
/// count, never as an error per refusal (697 refusals logged rmcp's "Internal server
/// error when create session" 697 times).
#[tokio::test]
async fn sessions_refused_past_the_cap_are_logged_once_not_per_refusal() {
    let log = std::env::temp_dir().join(format!("toolgate-refusal-log-{}.txt", std::process::id()));
    let mut server = tokio::process::Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--store", "memory", "--max-sessions", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    let url = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(url) = text.split("serving Streamable HTTP at ").nth(1).and_then(|r| r.split_whitespace().next()) {
            break url.to_string();
        }
        assert!(Instant::now() < deadline, "the server did not start: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let _held = common::raw::RawSession::open(&url).await;
    for _ in 0..30 {
        assert_eq!(common::raw::initialize(&url, &[]).await.status, 503);
    }
    // A round trip after the refusals, so every line they caused is written.
    let _ = SessionlessClient::new(&url).tool_names().await;
    server.kill().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert_eq!(text.matches("ERROR").count(), 0, "{text}");
    assert_eq!(text.matches("refused new sessions").count(), 1, "{text}");
}

/// SEP-2243: an argument marked `x-mcp-header` travels as `Mcp-Param-{Name}` too, and the
/// server holds the header to the body (400 with `-32020` on a mismatch or a missing
/// header; the base64 form for values a header cannot carry). With `--key-headers` a keyed
/// tool's key travels so, for a gateway to route by the object.
#[tokio::test]
async fn arguments_marked_as_headers_are_held_to_the_body() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    let client = SessionlessClient::new(&url);
    let call = |value: &'static str, header: Option<&'static str>| {
        let client = &client;
        async move {
            let headers: Vec<(&str, &str)> = header.map(|h| ("Mcp-Param-Region", h)).into_iter().collect();
            client.call_with_headers("test_custom_headers", json!({ "region": value }), &headers).await
        }
    };
    for (value, header) in [("eu-west", "eu-west"), ("Hello", "=?base64?SGVsbG8=?=")] {
        let reply = call(value, Some(header)).await;
        assert_eq!(reply.status, 200, "{value} / {header}: {}", reply.body);
    }
    for (value, header) in [("eu-west", Some("us-east")), ("eu-west", None), ("Hello", Some("=?base64?SGVsbG8?="))] {
        let reply = call(value, header).await;
        assert_eq!(reply.status, 400, "{value} / {header:?}: {}", reply.body);
        assert_eq!(reply.error()["code"], -32020, "{value} / {header:?}");
    }

    let (_server, url) = spawn_http_example("invoice", &["--key-headers"], &[]).await;
    let client = SessionlessClient::new(&url);
    let tools = client.list_tools().await;
    let view = tools.iter().find(|t| t["name"] == "invoice_view").unwrap();
    assert_eq!(view["inputSchema"]["properties"]["id"]["x-mcp-header"], "Id", "{view}");
    let arguments = json!({ "domain": "invoice", "id": "INV-1" });
    let routed = client.call_with_headers("invoice_view", arguments.clone(), &[("Mcp-Param-Id", "INV-1")]).await;
    assert_eq!(routed.status, 200, "{}", routed.body);
    for headers in [vec![], vec![("Mcp-Param-Id", "INV-2")]] {
        let reply = client.call_with_headers("invoice_view", arguments.clone(), &headers).await;
        assert_eq!((reply.status.as_u16(), reply.error()["code"].as_i64()), (400, Some(-32020)), "{headers:?}");
    }
}

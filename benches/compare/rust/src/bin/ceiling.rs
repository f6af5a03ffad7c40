//! The ceiling: a bare hyper 1 HTTP/1.1 server answering `tools/call invoice_view` (and `invoice_submit`)
//! with exactly the bytes plain rmcp (`rmcp_srv_cached`) answers the same request with: no MCP layer,
//! no session, no routing, no tool; it finds the JSON-RPC id and the invoice id in the request with a
//! byte search and splices them into the answer. "The fastest anything could answer these bytes."
//!
//! usage: ceiling <port> [stateless|stateful]
//!
//! - stateless (default): 200, `content-type: application/json`, the body rmcp writes without a session
//!   (MCP 2026-07-28, JSON replies).
//! - stateful: sessions are ignored. `initialize` gets a plausible result and an `mcp-session-id` header,
//!   notifications get 202, and calls get the body rmcp writes in a session: an SSE stream (its priming
//!   event, then the result event), here framed with content-length where rmcp sends it chunked.
//!
//! TCP_NODELAY is set on every connection (NODELAY=0 to disable), as `rmcp_srv_cached` does.
use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode, body::Incoming, header, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use memchr::memmem;

/// The session id handed out by `initialize` in stateful mode (never checked).
const SESSION_ID: &str = "00000000-0000-4000-8000-000000000000";
/// What rmcp writes before the result in a session: its priming event.
const SSE_PRIMING: &[u8] = b"data: \nid: 0/0\nretry: 3000\n\ndata: ";
const SSE_END: &[u8] = b"\nid: 1/0\n\n";

/// What a request asks, as borrowed slices of its body where possible.
struct Call<'a> {
    /// The JSON-RPC id exactly as written (a number or a quoted string); None for a notification.
    id: Option<std::borrow::Cow<'a, [u8]>>,
    method: std::borrow::Cow<'a, str>,
    /// `params.name`, for tools/call.
    tool: Option<std::borrow::Cow<'a, str>>,
    /// `params.arguments.id`, JSON-escaped (as it goes between quotes in JSON).
    arg_id: Option<std::borrow::Cow<'a, [u8]>>,
}

/// The bytes after `key` up to the next `"`, when they hold no escape (else None: the slow path decodes).
fn plain_string_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = memmem::find(body, key)? + key.len();
    let len = memchr::memchr(b'"', &body[start..])?;
    let s = &body[start..start + len];
    (!s.contains(&b'\\')).then_some(s)
}

/// The fast path: the shapes the wrk scripts send (`{"jsonrpc":"2.0","id":N,"method":"…","params":{"name":"…",
/// "arguments":{"id":"…",…}…}}`, the JSON-RPC id before the params). None sends the request to the slow path.
fn scan(body: &[u8]) -> Option<Call<'_>> {
    let method = std::str::from_utf8(plain_string_after(body, b"\"method\":\"")?).ok()?;
    let id = match memmem::find(body, b"\"id\":") {
        // A notification has no id of its own (and no arguments holding one).
        None => None,
        Some(at) => {
            let v = &body[at + 5..];
            let len = match v.first()? {
                b'"' => memchr::memchr(b'"', &v[1..])? + 2,
                b'-' | b'0'..=b'9' => v.iter().position(|b| !matches!(b, b'-' | b'0'..=b'9' | b'.' | b'e' | b'E' | b'+'))?,
                _ => return None,
            };
            let id = &v[..len];
            // The first "id" must be the request's, not the arguments' (which come after "params").
            if memmem::find(&body[..at], b"\"params\"").is_some() || id.contains(&b'\\') {
                return None;
            }
            Some(id.into())
        }
    };
    if method != "tools/call" {
        return Some(Call { id, method: method.into(), tool: None, arg_id: None });
    }
    let tool = std::str::from_utf8(plain_string_after(body, b"\"name\":\"")?).ok()?;
    let arg_id = plain_string_after(body, b"\"arguments\":{\"id\":\"")?;
    Some(Call { id, method: method.into(), tool: Some(tool.into()), arg_id: Some(arg_id.into()) })
}

/// The slow path: any other valid JSON-RPC request (whitespace, other key orders, escapes).
fn parse(body: &[u8]) -> Option<Call<'static>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = v.get("id").map(|id| serde_json::to_vec(id).unwrap().into());
    let method = v.get("method")?.as_str()?.to_owned().into();
    let params = v.get("params");
    let tool = params.and_then(|p| p.get("name")?.as_str()).map(|s| s.to_owned().into());
    let arg_id = params.and_then(|p| p.get("arguments")?.get("id")?.as_str()).map(|s| {
        let quoted = serde_json::to_vec(s).unwrap();
        quoted[1..quoted.len() - 1].to_vec().into()
    });
    Some(Call { id, method, tool, arg_id })
}

/// rmcp's answer to `invoice_view` / `invoice_submit` (`Json(ViewOut { id, state })`), byte for byte.
fn tool_result(out: &mut Vec<u8>, id: &[u8], arg_id: &[u8], state: &str, stateless: bool) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(if stateless {
        b",\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"{\\\"id\\\":\\\"".as_slice()
    } else {
        b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"id\\\":\\\"".as_slice()
    });
    // The id inside the text is JSON inside a JSON string: escaped once more.
    for &b in arg_id {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.extend_from_slice(b"\\\",\\\"state\\\":\\\"");
    out.extend_from_slice(state.as_bytes());
    out.extend_from_slice(b"\\\"}\"}],\"structuredContent\":{\"id\":\"");
    out.extend_from_slice(arg_id);
    out.extend_from_slice(b"\",\"state\":\"");
    out.extend_from_slice(state.as_bytes());
    out.extend_from_slice(b"\"},\"isError\":false}}");
}

fn error(out: &mut Vec<u8>, id: &[u8], code: i32, message: &str) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(format!(",\"error\":{{\"code\":{code},\"message\":{}}}}}", serde_json::json!(message)).as_bytes());
}

fn respond(status: StatusCode, content_type: Option<&'static str>, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(ct));
    }
    r
}

async fn handle(req: Request<Incoming>, stateless: bool) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() == Method::DELETE {
        return Ok(respond(StatusCode::ACCEPTED, None, Vec::new()));
    }
    if req.method() != Method::POST || req.uri().path() != "/mcp" {
        let mut r = respond(StatusCode::METHOD_NOT_ALLOWED, None, b"Method Not Allowed".to_vec());
        r.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return Ok(r);
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(respond(StatusCode::BAD_REQUEST, None, Vec::new())),
    };
    let call = match scan(&body).or_else(|| parse(&body)) {
        Some(call) => call,
        None => {
            let mut out = Vec::new();
            error(&mut out, b"null", -32700, "Parse error");
            return Ok(respond(StatusCode::BAD_REQUEST, Some("application/json"), out));
        }
    };
    let Some(id) = call.id else {
        // A notification (notifications/initialized and the like).
        return Ok(respond(StatusCode::ACCEPTED, None, Vec::new()));
    };
    let mut out = Vec::with_capacity(if stateless { 256 } else { 320 });
    if !stateless {
        out.extend_from_slice(SSE_PRIMING);
    }
    let mut session = false;
    match (&*call.method, call.tool.as_deref(), call.arg_id.as_deref()) {
        ("tools/call", Some(tool @ ("invoice_view" | "invoice_submit")), Some(arg_id)) => {
            let state = if tool == "invoice_view" { "draft" } else { "review" };
            tool_result(&mut out, &id, arg_id, state, stateless);
        }
        ("tools/call", _, _) => error(&mut out, &id, -32602, "tool not found"),
        ("initialize", _, _) => {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(&id);
            out.extend_from_slice(
                b",\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"perf-ceiling\",\"version\":\"0.1.0\"}}}",
            );
            session = !stateless;
        }
        ("ping", _, _) => {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(&id);
            out.extend_from_slice(b",\"result\":{}}");
        }
        _ => error(&mut out, &id, -32601, "Method not found"),
    }
    if stateless {
        return Ok(respond(StatusCode::OK, Some("application/json"), out));
    }
    out.extend_from_slice(SSE_END);
    let mut r = respond(StatusCode::OK, Some("text/event-stream"), out);
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    if session {
        h.insert("mcp-session-id", header::HeaderValue::from_static(SESSION_ID));
    }
    Ok(r)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(8102);
    let stateless = args.get(2).map(|s| s != "stateful").unwrap_or(true);
    let nodelay = std::env::var("NODELAY").map(|v| v != "0").unwrap_or(true);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("nodelay={nodelay}");
    eprintln!("ceiling listening 127.0.0.1:{port} stateful={}", !stateless);
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("accept: {e}");
                continue;
            }
        };
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(req, stateless));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(tcp), svc).await;
        });
    }
}

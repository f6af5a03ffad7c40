//! A raw-HTTP MCP client, for what rmcp's client does not let a test control: the sessionless
//! 2026-07-28 revision request by request (extra headers, the reply's status and content
//! type), a bare session whose `Mcp-Session-Id` the test can read, and a lone `initialize`
//! whose refusal (403, 429, 503) the test can inspect.
//!
//! A 2026-07-28 request is self-contained. rmcp 3.11 routes a POST to its stateless path, even
//! on a server that keeps sessions for older revisions, when `params._meta` holds both
//! `io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`
//! (`clientInfo` is optional). Such a request must also carry the `MCP-Protocol-Version`
//! header, equal to the `_meta` version, and the SEP-2243 routing headers `Mcp-Method` (always)
//! and `Mcp-Name` (`params.name` for `tools/call` and `prompts/get`, `params.uri` for
//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`). Like every POST, it
//! needs `Content-Type: application/json` and an `Accept` listing both `application/json` and
//! `text/event-stream`. A missing header is rejected with HTTP 400 and JSON-RPC `-32020`;
//! missing `_meta` keys with HTTP 400 and `-32602`.
//!
//! toolgate's servers answer a sessionless request whose call causes no other message as
//! plain `application/json` (rmcp's `json_response`); rmcp's default would be a one-event
//! `text/event-stream`. Errors that map to an HTTP status (400, 404) are plain JSON too.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::PATIENCE;

/// The sessionless protocol revision.
pub const SESSIONLESS_VERSION: &str = "2026-07-28";
/// The session-based protocol revision [`RawSession`] negotiates.
pub const SESSION_VERSION: &str = "2025-11-25";

/// The `Accept` header every POST must send.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// One HTTP reply to a JSON-RPC request.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The media type of the body, lowercased and without parameters: `application/json`,
    /// `text/event-stream`, or empty when the reply names none.
    pub content_type: String,
    /// The `Mcp-Session-Id` response header, if any.
    pub session_id: Option<String>,
    /// Every response header (`Retry-After`, …).
    pub headers: HeaderMap,
    /// The body as it came, unless it was an event stream (then empty).
    pub body: String,
    /// `Ok(result)` or `Err(error)` (the JSON-RPC error object, with `code` and `message`).
    /// A body that is no JSON-RPC reply (rmcp answers some HTTP errors, such as an unknown
    /// session's 404, in plain text) comes as `Err(Value::String(body))`; an event stream
    /// that ended without the reply (a request its client cancelled) as `Err(Value::Null)`.
    pub message: Result<Value, Value>,
    /// The messages the event stream carried before the reply (notifications, requests).
    pub before: Vec<Value>,
}

impl Reply {
    /// Whether the body was a server-sent event stream (`text/event-stream`).
    pub fn is_sse(&self) -> bool {
        self.content_type == "text/event-stream"
    }

    /// Whether the body was a plain JSON document (`application/json`).
    pub fn is_json(&self) -> bool {
        self.content_type == "application/json"
    }

    /// The JSON-RPC result; panics, showing the error, if there is none.
    pub fn result(self) -> Value {
        match self.message {
            Ok(result) => result,
            Err(error) => panic!("expected a JSON-RPC result, got HTTP {} with {error}", self.status),
        }
    }

    /// The JSON-RPC error object; panics, showing the result, if the request succeeded.
    pub fn error(self) -> Value {
        match self.message {
            Err(error) => error,
            Ok(result) => panic!("expected a JSON-RPC error, got HTTP {} with {result}", self.status),
        }
    }
}

/// A `tools/call` result as `(structuredContent, isError)`; panics on a protocol error.
fn tool_outcome(tool: &str, reply: Reply) -> (Value, bool) {
    let status = reply.status;
    let mut result = match reply.message {
        Ok(result) => result,
        Err(error) => panic!("tools/call {tool}: HTTP {status}, JSON-RPC error {error}"),
    };
    let is_error = result["isError"] == true;
    let content = result
        .get_mut("structuredContent")
        .map(Value::take)
        .unwrap_or_else(|| panic!("{tool}: every toolgate result has structuredContent: {result}"));
    (content, is_error)
}

/// The plumbing [`SessionlessClient`] and [`RawSession`] share: one endpoint, request ids.
struct Endpoint {
    http: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

impl Endpoint {
    fn new(url: &str) -> Self {
        Self::with_client(url, reqwest::Client::new())
    }

    /// An endpoint whose requests leave from the local address `from` (a loopback address
    /// other than 127.0.0.1 is another client to the server).
    fn from_address(url: &str, from: IpAddr) -> Self {
        let http = reqwest::Client::builder().local_address(from).build().expect("an HTTP client");
        Self::with_client(url, http)
    }

    fn with_client(url: &str, http: reqwest::Client) -> Self {
        Self { http, url: url.to_string(), next_id: AtomicU64::new(1) }
    }

    /// POSTs `initialize` asking for `protocol_version`, with `extra_headers`; the reply as
    /// it came.
    async fn initialize(&self, protocol_version: &str, extra_headers: &[(&str, &str)]) -> Reply {
        let id = self.next_id();
        let initialize = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": { "name": "toolgate-tests", "version": "0.0.0" },
            },
        });
        self.request(id, header_map(extra_headers), &initialize).await
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// POSTs `body` with the content negotiation every POST needs plus `headers`.
    async fn post(&self, headers: HeaderMap, body: &Value) -> reqwest::Response {
        self.post_bytes(headers, serde_json::to_vec(body).expect("serialize request")).await
    }

    /// POSTs `body` exactly as given (malformed, say), as [`Self::post`] does.
    async fn post_bytes(&self, headers: HeaderMap, body: Vec<u8>) -> reqwest::Response {
        let send = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
            .headers(headers)
            .body(body)
            .send();
        tokio::time::timeout(PATIENCE, send).await.expect("the server did not answer").expect("POST")
    }

    /// POSTs `body` exactly as given and reads the reply to request `id`.
    async fn request_raw(&self, id: u64, headers: HeaderMap, body: &str) -> Reply {
        let response = self.post_bytes(headers, body.as_bytes().to_vec()).await;
        tokio::time::timeout(PATIENCE, read_reply(response, id)).await.expect("the reply did not complete")
    }

    /// POSTs request `id` and reads the reply that answers it.
    async fn request(&self, id: u64, headers: HeaderMap, body: &Value) -> Reply {
        let response = self.post(headers, body).await;
        tokio::time::timeout(PATIENCE, read_reply(response, id)).await.expect("the reply did not complete")
    }
}

/// `headers` as a map; a name given twice keeps its last value.
fn header_map(headers: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for &(name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).unwrap_or_else(|_| panic!("bad header name {name:?}"));
        let value = HeaderValue::from_str(value).unwrap_or_else(|_| panic!("bad value for header {name}: {value:?}"));
        map.insert(name, value);
    }
    map
}

/// Reads the JSON-RPC reply to request `id` from `response`, JSON or SSE.
async fn read_reply(mut response: reqwest::Response, id: u64) -> Reply {
    let status = response.status();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let content_type = header("content-type")
        .map(|value| value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .unwrap_or_default();
    let session_id = header("mcp-session-id");
    let headers = response.headers().clone();
    let (message, before, body) = if content_type == "text/event-stream" {
        let (message, before) = read_sse_reply(&mut response, id).await;
        (message, before, String::new())
    } else {
        let body = response.text().await.expect("read the reply body");
        let message = match serde_json::from_str::<Value>(&body) {
            Ok(message) if is_reply(&message) => split_reply(message),
            _ => Err(Value::String(body.clone())),
        };
        (message, Vec::new(), body)
    };
    Reply { status, content_type, session_id, headers, body, message, before }
}

/// Whether `message` is a JSON-RPC response or error (not a request or notification).
fn is_reply(message: &Value) -> bool {
    message.get("method").is_none() && (message.get("result").is_some() || message.get("error").is_some())
}

fn split_reply(mut message: Value) -> Result<Value, Value> {
    match message.get_mut("error") {
        Some(error) => Err(error.take()),
        None => Ok(message["result"].take()),
    }
}

/// Reads server-sent events until the reply to request `id`. Skips comments, events without
/// data (rmcp's priming event, `retry:`-only events), and any notification or server request.
/// Stops at the reply rather than at the end of the stream, which may stay open.
async fn read_sse_reply(response: &mut reqwest::Response, id: u64) -> (Result<Value, Value>, Vec<Value>) {
    let mut pending: Vec<u8> = Vec::new();
    let mut data: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    loop {
        let chunk = response.chunk().await.expect("read the event stream");
        let at_end = chunk.is_none();
        match chunk {
            Some(chunk) => pending.extend_from_slice(&chunk),
            // End any last line and event that lack their line breaks.
            None => pending.extend_from_slice(b"\n\n"),
        }
        // Complete lines only: a chunk may end mid-line (or mid-character).
        while let Some(newline) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=newline).collect();
            let line = String::from_utf8(line).expect("the event stream is UTF-8");
            let line = line.trim_end_matches(['\n', '\r']);
            if !line.is_empty() {
                // `field: value`, or `field` alone; a line starting with ':' is a comment.
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                if field == "data" {
                    data.push(value.strip_prefix(' ').unwrap_or(value).to_string());
                }
                continue;
            }
            // A blank line ends the event.
            let event = data.join("\n");
            data.clear();
            if event.trim().is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&event).unwrap_or_else(|e| panic!("bad SSE data {event:?}: {e}"));
            // Request 0 takes any reply: a test reading replies to ids that are not numbers.
            if is_reply(&message) && (message["id"] == id || id == 0) {
                return (split_reply(message), seen);
            }
            seen.push(message);
        }
        if at_end {
            return (Err(Value::Null), seen);
        }
    }
}

/// A client for the sessionless 2026-07-28 revision: every request stands alone, with the
/// protocol version and client capabilities in `params._meta` and the routing headers rmcp
/// requires. It never initializes and never holds a session.
pub struct SessionlessClient {
    endpoint: Endpoint,
}

impl SessionlessClient {
    /// A client for a Streamable HTTP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn new(url: &str) -> Self {
        Self { endpoint: Endpoint::new(url) }
    }

    /// The endpoint this client posts to.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    /// The `_meta` every request carries: the two keys 2026-07-28 requires
    /// (`protocolVersion`, `clientCapabilities`) and the optional `clientInfo`.
    pub fn request_meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": SESSIONLESS_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "toolgate-tests", "version": "0.0.0" },
        })
    }

    /// Sends one sessionless request and reads its reply.
    ///
    /// `params` must be an object (or null); [`Self::request_meta`] is merged into its `_meta`,
    /// keys already there winning. The request carries `MCP-Protocol-Version: 2026-07-28`,
    /// `Mcp-Method: {method}` and, for the methods that route by name, `Mcp-Name`.
    /// `extra_headers` are sent too and replace any of those with the same name, so a test
    /// can add `Mcp-Session-Id` or send a wrong header on purpose.
    pub async fn request(&self, method: &str, params: Value, extra_headers: &[(&str, &str)]) -> Reply {
        let mut params = match params {
            Value::Object(params) => params,
            Value::Null => Map::new(),
            other => panic!("params must be an object, got {other}"),
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        let Value::Object(meta) = meta else { panic!("params._meta must be an object") };
        let Value::Object(defaults) = Self::request_meta() else { unreachable!() };
        for (key, value) in defaults {
            meta.entry(key).or_insert(value);
        }

        let mut headers = vec![("MCP-Protocol-Version", SESSIONLESS_VERSION), ("Mcp-Method", method)];
        let name_field = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
            "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
            _ => None,
        };
        // rmcp wants non-ASCII names Base64-wrapped (`=?base64?…?=`); test names are plain.
        let name = name_field.and_then(|field| params.get(field)).and_then(Value::as_str).map(str::to_string);
        if let Some(name) = &name {
            headers.push(("Mcp-Name", name));
        }
        let mut headers = header_map(&headers);
        headers.extend(header_map(extra_headers));

        let id = self.endpoint.next_id();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.endpoint.request(id, headers, &body).await
    }

    /// POSTs `body` exactly as given with exactly `headers` (a name given twice is sent
    /// twice; `Content-Type` and `Accept` replace the defaults) and reads the reply to
    /// request `id`: for the differential corpus, whose variants set every header.
    pub async fn post_raw(&self, body: &str, id: u64, headers: &[(&str, &str)]) -> Reply {
        let mut map = HeaderMap::new();
        for &(name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap_or_else(|_| panic!("bad header name {name:?}"));
            let value = HeaderValue::from_str(value).unwrap_or_else(|_| panic!("bad value for {name}: {value:?}"));
            map.append(name, value);
        }
        self.endpoint.request_raw(id, map, body).await
    }

    /// `tools/call` with `extra_headers` (see [`Self::request`]); the raw reply.
    pub async fn call_with_headers(&self, tool: &str, arguments: Value, extra_headers: &[(&str, &str)]) -> Reply {
        self.request("tools/call", json!({ "name": tool, "arguments": arguments }), extra_headers).await
    }

    /// Calls a tool; returns its `structuredContent` and whether it is an error (`isError`).
    /// Panics on a JSON-RPC error.
    pub async fn call(&self, tool: &str, arguments: Value) -> (Value, bool) {
        tool_outcome(tool, self.call_with_headers(tool, arguments, &[]).await)
    }

    /// Calls a tool that must succeed and returns its `structuredContent`.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let (content, is_error) = self.call(tool, arguments).await;
        assert!(!is_error, "{tool} failed: {content}");
        content
    }

    /// The `tools` of `tools/list`, every page; panics on a JSON-RPC error.
    pub async fn list_tools(&self) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut params = json!({});
        loop {
            let mut result = self.request("tools/list", params, &[]).await.result();
            let Value::Array(page) = result["tools"].take() else { panic!("tools/list without tools: {result}") };
            tools.extend(page);
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(cursor) => params = json!({ "cursor": cursor }),
                None => return tools,
            }
        }
    }

    /// The names `tools/list` shows, in its order.
    pub async fn tool_names(&self) -> Vec<String> {
        self.list_tools().await.iter().map(|tool| tool["name"].as_str().expect("tool name").to_string()).collect()
    }
}

/// POSTs `initialize` (MCP 2025-11-25) to `url` with `extra_headers` and returns the reply
/// as it came, for a test of what the server answers before any session exists (403, 503,
/// 429). A reply with an `Mcp-Session-Id` opened a session, which stays open.
pub async fn initialize(url: &str, extra_headers: &[(&str, &str)]) -> Reply {
    Endpoint::new(url).initialize(SESSION_VERSION, extra_headers).await
}

/// [`initialize`] from the local address `from`: to the server, another client than
/// 127.0.0.1 when it is another loopback address (127.0.0.2, …).
pub async fn initialize_from(url: &str, from: IpAddr) -> Reply {
    Endpoint::from_address(url, from).initialize(SESSION_VERSION, &[]).await
}

/// A session opened by hand (`initialize`, then `notifications/initialized`), so a test can
/// read its `Mcp-Session-Id` and talk on it. Requests carry `Mcp-Session-Id` and
/// `MCP-Protocol-Version` (the negotiated revision, 2025-11-25 unless the test asks for
/// another), and no per-request `_meta` or `Mcp-Method` headers (that revision has none).
/// The session lives until [`Self::close`] or the server's end.
pub struct RawSession {
    endpoint: Endpoint,
    session_id: String,
    /// The protocol version the server negotiated.
    version: String,
    /// The `initialize` result.
    pub initialize_result: Value,
    /// Headers every request of the session carries (its credentials).
    carried: Vec<(String, String)>,
}

impl RawSession {
    /// Opens a session whose every request, `initialize` included, carries `Authorization:
    /// Bearer {token}`.
    pub async fn open_as(url: &str, token: &str) -> Self {
        let bearer = format!("Bearer {token}");
        Self::try_open(url, SESSION_VERSION, &[("Authorization", bearer.as_str())])
            .await
            .unwrap_or_else(|reply| panic!("initialize refused: HTTP {} with {:?}", reply.status, reply.message))
    }

    /// Initializes a session at `url` (`http://127.0.0.1:PORT/mcp`).
    pub async fn open(url: &str) -> Self {
        let session = Self::try_open(url, SESSION_VERSION, &[])
            .await
            .unwrap_or_else(|reply| panic!("initialize refused: HTTP {} with {:?}", reply.status, reply.message));
        let negotiated = &session.initialize_result["protocolVersion"];
        assert_eq!(negotiated, SESSION_VERSION, "negotiated another version");
        session
    }

    /// Sends `initialize` asking for `protocol_version`, with `extra_headers`; a reply
    /// without a session (a refusal) is returned as it came. Later requests carry the
    /// version the server negotiated.
    pub async fn try_open(url: &str, protocol_version: &str, extra_headers: &[(&str, &str)]) -> Result<Self, Reply> {
        let endpoint = Endpoint::new(url);
        let reply = endpoint.initialize(protocol_version, extra_headers).await;
        let Some(session_id) = reply.session_id.clone() else { return Err(reply) };
        let initialize_result = reply.result();
        let version = initialize_result["protocolVersion"].as_str().expect("a negotiated version").to_string();
        // The credentials it opened with, it goes on with: a session is its opener's.
        let carried = extra_headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let session = Self { endpoint, session_id, version, initialize_result, carried };

        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = session.endpoint.post(session.headers(), &initialized).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "notifications/initialized was not accepted");
        Ok(session)
    }

    /// The same session id held by someone else: its requests carry `credentials`
    /// (an `Authorization`, or none) instead of the opener's.
    pub fn held_by(&self, credentials: &[(&str, &str)]) -> Self {
        Self {
            endpoint: Endpoint::new(&self.endpoint.url),
            session_id: self.session_id.clone(),
            version: self.version.clone(),
            initialize_result: self.initialize_result.clone(),
            carried: credentials.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        }
    }

    /// The session's id, the `Mcp-Session-Id` the server assigned.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The endpoint of the session.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = header_map(&[("Mcp-Session-Id", &self.session_id), ("MCP-Protocol-Version", &self.version)]);
        let carried: Vec<(&str, &str)> = self.carried.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        headers.extend(header_map(&carried));
        headers
    }

    /// Sends a request on the session and reads its reply; `params` is sent as given.
    pub async fn request(&self, method: &str, params: Value) -> Reply {
        self.request_with_headers(method, params, &[]).await
    }

    /// [`Self::request`] with `extra_headers` too (an `Authorization`, say).
    pub async fn request_with_headers(&self, method: &str, params: Value, extra_headers: &[(&str, &str)]) -> Reply {
        let id = self.endpoint.next_id();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let mut headers = self.headers();
        // An extra header replaces a carried one of the same name.
        for (name, value) in header_map(extra_headers) {
            if let Some(name) = name {
                headers.insert(name, value);
            }
        }
        self.endpoint.request(id, headers, &body).await
    }

    /// POSTs `body` on the session exactly as given (it may be malformed) and reads the
    /// reply to request `id` (what the body's `id` would be, if it has one).
    pub async fn post_raw(&self, body: &str, id: u64) -> Reply {
        self.endpoint.request_raw(id, self.headers(), body).await
    }

    /// [`Self::post_raw`] with `extra_headers` too (an `Origin`, say).
    pub async fn post_raw_with_headers(&self, body: &str, id: u64, extra_headers: &[(&str, &str)]) -> Reply {
        let mut headers = self.headers();
        headers.extend(header_map(extra_headers));
        self.endpoint.request_raw(id, headers, body).await
    }

    /// Calls a tool on the session; returns its `structuredContent` and whether it is an
    /// error (`isError`). Panics on a JSON-RPC error.
    pub async fn call(&self, tool: &str, arguments: Value) -> (Value, bool) {
        tool_outcome(tool, self.request("tools/call", json!({ "name": tool, "arguments": arguments })).await)
    }

    /// The names `tools/list` shows on the session (first page).
    pub async fn tool_names(&self) -> Vec<String> {
        let result = self.request("tools/list", json!({})).await.result();
        let tools = result["tools"].as_array().expect("tools/list without tools");
        tools.iter().map(|tool| tool["name"].as_str().expect("tool name").to_string()).collect()
    }

    /// Opens the session's standalone GET stream and waits until the server ends it: the
    /// session closed. Nothing is sent meanwhile, so nothing counts as the session's activity
    /// after the GET itself.
    pub async fn wait_until_closed(&self) {
        let get =
            self.endpoint.http.get(&self.endpoint.url).headers(self.headers()).header(ACCEPT, "text/event-stream");
        let mut response =
            tokio::time::timeout(PATIENCE, get.send()).await.expect("the server did not answer").expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "the session's GET stream did not open");
        let ended = async { while let Ok(Some(_)) = response.chunk().await {} };
        tokio::time::timeout(PATIENCE, ended).await.expect("the server kept the session open");
    }

    /// Ends the session with `DELETE`; returns the HTTP status.
    pub async fn close(self) -> StatusCode {
        let delete = self.endpoint.http.delete(&self.endpoint.url).headers(self.headers()).send();
        tokio::time::timeout(PATIENCE, delete).await.expect("the server did not answer").expect("DELETE").status()
    }
}

/// One open `subscriptions/listen` stream (MCP 2026-07-28), as the conformance suite opens
/// it — a raw streaming POST — with its server-sent messages as they arrive.
pub struct ListenStream {
    response: reqwest::Response,
    pending: Vec<u8>,
}

impl ListenStream {
    /// Opens a stream as request `id`, asking for `notifications` (a subscription filter),
    /// with `extra_headers` (a bearer token, say).
    pub async fn open(url: &str, id: u64, notifications: Value, extra_headers: &[(&str, &str)]) -> Self {
        let mut params = json!({ "notifications": notifications });
        params["_meta"] = SessionlessClient::request_meta();
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params });
        let mut headers = header_map(&[
            ("MCP-Protocol-Version", SESSIONLESS_VERSION),
            ("Mcp-Method", "subscriptions/listen"),
            ("Content-Type", "application/json"),
            ("Accept", ACCEPT_BOTH),
        ]);
        headers.extend(header_map(extra_headers));
        let response =
            reqwest::Client::new().post(url).headers(headers).body(body.to_string()).send().await.expect("listen");
        assert_eq!(response.status(), 200);
        Self { response, pending: Vec::new() }
    }

    /// Whether the stream ends within `wait`, with no message before its end (a keep-alive
    /// comment is no message).
    pub async fn ended(&mut self, wait: std::time::Duration) -> bool {
        let end = tokio::time::timeout(wait, async {
            while let Some(chunk) = self.response.chunk().await.ok()? {
                self.pending.extend_from_slice(&chunk);
            }
            Some(())
        });
        let ended = end.await.is_ok_and(|ended| ended.is_some());
        let rest = String::from_utf8_lossy(&self.pending);
        ended && rest.lines().all(|line| line.is_empty() || line.starts_with(':'))
    }

    /// The next message on the stream, or `None` if none comes within `wait`.
    pub async fn next(&mut self, wait: std::time::Duration) -> Option<Value> {
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

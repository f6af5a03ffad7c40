//! The requests toolgate answers itself over Streamable HTTP: a `tools/call` or a
//! `tools/list` of MCP 2026-07-28 (sessionless, in either server mode), and a `tools/call`
//! on a stateful session, go from the wire check's bytes to [`Connection::serve`] and back
//! to response bytes written here, without rmcp's per-request machinery (a handler built
//! and a task spawned per request, the message parsed again into rmcp's model, the result
//! serialized twice).
//!
//! Only what rmcp would accept as it is comes this way: the owned path *recognizes* a
//! request — every header and member it reads has the one value rmcp would serve — and
//! hands anything else to rmcp unchanged, which answers it (or refuses it) as before. So
//! rmcp stays the protocol's source of truth: an odd header, an `Origin`, a session rmcp
//! does not hold, a `requestState` or `inputResponses`, a tool that may run as a task,
//! asks for a confirmation or has arguments that travel as headers, on a session a
//! handler that takes a `Ctx` (its requests to the client ride the stream of the request
//! that caused them, which rmcp knows only for its own), a `_meta` member this module
//! does not know: each goes to rmcp. What the owned path serves, it serves through the
//! same call path as rmcp's `tools/call`, [`Connection::serve`].
//!
//! A call that causes messages before its result (a session's `list_changed`, log lines,
//! progress) is answered as an SSE stream, the messages first; any other is answered with
//! one JSON body, whose `text` block is derived from the bytes of its `structuredContent`
//! (serialized once). A session's calls served here are cancelled by the client's
//! `notifications/cancelled` (`Connection::on_cancelled`) and then, as MCP asks and as
//! rmcp does, answered with no response (the call's event stream ends without one); they
//! keep rmcp's session in use.

// Logging is deprecated by SEP-2577 in rmcp 3.11 but still part of the revisions toolgate
// serves: a 2026-07-28 request may ask for log messages in `_meta`.
#![allow(deprecated)]

use crate::error::jsonrpc;
use std::borrow::Cow;
use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::Stream;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientJsonRpcMessage, ClientNotification, ErrorData, LoggingLevel, ProgressToken,
    ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::SessionId;

use super::call_stream::CallStreamSessions;
use super::connection::{CallRequest, OwnedCallGuard, Served};
use super::{Connection, Shared};
use crate::action::{RequestSide, TaskSupport};
use crate::auth::Principal;
use crate::engine::Reply;

/// The only protocol revision the owned path serves.
const REVISION: &str = "2026-07-28";

/// What the owned path needs beside the server: made on the first request it serves
/// (inside the runtime: the detached peer runs a task).
pub(crate) struct OwnedPath {
    shared: Arc<Shared>,
    /// The allowed `Host`s, parsed once: `None` for any host.
    hosts: Option<Vec<AllowedHost>>,
    /// The sessions of a stateful server, whose calls the owned path may serve.
    sessions: Option<Arc<CallStreamSessions>>,
    ready: OnceLock<Ready>,
}

/// An allowed `Host` as rmcp reads the configured entry: a host name (lowercase, without
/// brackets), and the port it requires, if it names one.
struct AllowedHost {
    name: String,
    port: Option<u16>,
}

impl AllowedHost {
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        let name = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
        match entry.parse::<http::uri::Authority>() {
            Ok(authority) => Some(Self { name: name(authority.host()), port: authority.port_u16() }),
            Err(_) => (!entry.is_empty()).then(|| Self { name: name(entry), port: None }),
        }
    }
}

struct Ready {
    /// What serves a sessionless call here: a connection the server does not keep, whose
    /// peer is of MCP 2026-07-28 (it refuses server-to-client requests, as rmcp's own peer
    /// of such a request does) and sends its notifications nowhere (a call's go to its own
    /// stream).
    connection: Connection,
    peer: Peer<RoleServer>,
    _detached: RunningService<RoleServer, Connection>,
    /// The names a sessionless `tools/call` may be answered here for: a tool that never
    /// runs as a task, asks for no confirmation and has no argument travelling as a header
    /// (for a grouped tool, every action's).
    callable: HashSet<String>,
    /// Those a session's `tools/call` may be answered here for: of `callable`, those whose
    /// handler cannot send the client requests of its own (rmcp carries them on the
    /// stream of the request that caused them, which it does not know here).
    session_callable: HashSet<String>,
    /// The `tools/list` result, written once, when it is the same for every caller (no
    /// tool requires a scope).
    list: Option<String>,
}

/// A transport that never receives and drops what it is given: the detached peer's.
struct Detached;

impl rmcp::transport::Transport<RoleServer> for Detached {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Ok(()))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        std::future::pending().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl OwnedPath {
    pub(crate) fn new(shared: Arc<Shared>, sessions: Option<Arc<CallStreamSessions>>) -> Self {
        let allowed = &shared.http.allowed_hosts;
        let hosts = (!allowed.is_empty()).then(|| allowed.iter().filter_map(|h| AllowedHost::parse(h)).collect());
        Self { shared, hosts, sessions, ready: OnceLock::new() }
    }

    fn ready(&self) -> &Ready {
        self.ready.get_or_init(|| {
            let info = rmcp::model::InitializeRequestParams::new(
                ClientCapabilities::default(),
                rmcp::model::Implementation::default(),
            )
            .with_protocol_version(rmcp::model::ProtocolVersion::V_2026_07_28);
            let connection = Connection::new(self.shared.clone(), false);
            let detached = rmcp::service::serve_directly(connection.clone(), Detached, Some(info));
            let registry = &self.shared.engine.registry;
            let plain =
                |tool: &crate::registry::ToolEntry| tool.task() == TaskSupport::Never && tool.confirm().is_none();
            let (mut callable, mut session_callable) = (HashSet::new(), HashSet::new());
            for tool in registry.tools() {
                let name = tool.domain.filter(|domain| registry.group(domain).is_some()).unwrap_or(tool.name);
                let Some(definition) = registry.definition(name) else { continue };
                let headers = serde_json::to_string(&definition.input_schema)
                    .is_ok_and(|schema| schema.contains(crate::registry::PARAM_HEADER_KEYWORD));
                let tools: Vec<_> = match registry.group(name) {
                    Some(group) => group.tools().filter_map(|t| registry.tool(t)).collect(),
                    None => vec![tool],
                };
                if !headers && tools.iter().all(|t| plain(t)) {
                    callable.insert(name.to_string());
                    if tools.iter().all(|t| !t.reaches_client()) {
                        session_callable.insert(name.to_string());
                    }
                }
            }
            let list = (!registry.has_scopes())
                .then(|| self.shared.tools_list_result(None, true))
                .and_then(|result| serde_json::to_string(&result).ok());
            Ready { connection, peer: detached.peer().clone(), _detached: detached, callable, session_callable, list }
        })
    }

    /// The response to `parts` and `bytes` (one well-formed JSON-RPC message, as the wire
    /// check found), if this is a request the owned path serves; `None` hands it to rmcp.
    pub(crate) async fn answer(&self, parts: &http::request::Parts, bytes: &[u8]) -> Option<Response> {
        let wanted = recognized_headers(parts, self.hosts.as_deref())?;
        let message: Incoming<'_> = serde_json::from_slice(bytes).ok()?;
        let id = plain_id(message.id)?;
        let params = message.params?;
        let (method, response) = match wanted {
            Wanted::Modern(method) => {
                let meta = params.meta.as_ref()?;
                if message.method != method
                    || meta.protocol_version.as_deref() != Some(REVISION)
                    || meta.client_capabilities.is_none()
                {
                    return None;
                }
                match method {
                    "tools/list" => (method, self.list(id, parts, params)?),
                    _ => (method, self.modern_call(id, parts, params).await?),
                }
            }
            Wanted::Session(session) => {
                if message.method != "tools/call" {
                    return None;
                }
                ("tools/call", self.session_call(id, parts, params, session).await?)
            }
        };
        crate::telemetry::record_owned(method);
        Some(response)
    }

    /// A `tools/list` of MCP 2026-07-28: written once when it is the same for everyone.
    fn list(&self, id: &RawValue, parts: &http::request::Parts, params: Params<'_>) -> Option<Response> {
        if params.name.is_some() || params.arguments.is_some() || params.cursor.is_some() {
            return None;
        }
        let result = match &self.ready().list {
            Some(list) => Cow::Borrowed(list.as_str()),
            None => {
                let principal = parts.extensions.get::<Principal>();
                Cow::Owned(serde_json::to_string(&self.shared.tools_list_result(principal, true)).ok()?)
            }
        };
        Some(json_response(envelope(id, "result", &result)))
    }

    /// A `tools/call` of MCP 2026-07-28, served by a connection the server does not keep.
    async fn modern_call(&self, id: &RawValue, parts: &http::request::Parts, params: Params<'_>) -> Option<Response> {
        let name = params.name?;
        if params.cursor.is_some() || one_header(parts, &MCP_NAME)? != name {
            return None;
        }
        let ready = self.ready();
        if !ready.callable.contains(name.as_ref()) {
            return None;
        }
        let meta = params.meta?;
        let cancel = CancellationToken::new();
        let client = RequestSide {
            peer: ready.peer.clone(),
            progress_token: meta.progress_token,
            log_level: meta.log_level,
            cancel: cancel.clone(),
        };
        let capabilities = meta.client_capabilities.unwrap_or_default();
        let request = call_request(parts, name, params.arguments, (true, capabilities), client, meta.traceparent);
        let call = OwnedCall { connection: ready.connection.clone(), request, modern: true, _tracked: None };
        Some(call.answer(id.get().to_string(), cancel).await)
    }

    /// A `tools/call` on the live stateful session `session`, served by its connection,
    /// which keeps the session's flow and focus.
    async fn session_call(
        &self,
        id: &RawValue,
        parts: &http::request::Parts,
        params: Params<'_>,
        session: &str,
    ) -> Option<Response> {
        let meta = params.meta;
        if params.cursor.is_some()
            || meta.as_ref().is_some_and(|meta| meta.protocol_version.is_some() || meta.client_capabilities.is_some())
        {
            return None;
        }
        let name = params.name?;
        if !self.ready().session_callable.contains(name.as_ref()) {
            return None;
        }
        // A session rmcp no longer holds is rmcp's to answer (404).
        let sessions = self.sessions.as_ref()?;
        let session = SessionId::from(session);
        let live = sessions.inner.has_session(&session).await.unwrap_or(false);
        let connection = live.then(|| self.shared.session_connection(&session)).flatten()?;
        let (peer, capabilities) = connection.session_client()?;
        if connection.due_for_touch() {
            // Any message resets rmcp's idle timer; this one the handler ignores.
            let touch = rmcp::model::CustomNotification::new("notifications/toolgate/in_use", None);
            let touch = ClientJsonRpcMessage::notification(ClientNotification::CustomNotification(touch));
            let _ = sessions.accept_message(&session, touch).await;
        }
        let request_id: rmcp::model::RequestId = serde_json::from_str(id.get()).ok()?;
        let (progress_token, traceparent) =
            meta.map(|meta| (meta.progress_token, meta.traceparent)).unwrap_or_default();
        let cancel = CancellationToken::new();
        let tracked = connection.track(request_id, cancel.clone());
        let client = RequestSide { peer, progress_token, log_level: None, cancel: cancel.clone() };
        let request = call_request(parts, name, params.arguments, (false, capabilities), client, traceparent);
        let call = OwnedCall { connection, request, modern: false, _tracked: Some(tracked) };
        Some(call.answer(id.get().to_string(), cancel).await)
    }
}

/// The call of tool `name` with `arguments`, from the request's `parts` (who is calling,
/// from where), of MCP 2026-07-28 or not (`modern`) from a client with `capabilities`.
fn call_request(
    parts: &http::request::Parts,
    name: Cow<'_, str>,
    arguments: Option<Map<String, Value>>,
    (modern, capabilities): (bool, ClientCapabilities),
    client: RequestSide,
    traceparent: Option<Cow<'_, str>>,
) -> CallRequest {
    let address = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|info| info.0.ip());
    CallRequest {
        name: name.into_owned(),
        arguments: arguments.unwrap_or_default(),
        request_state: None,
        input_responses: None,
        principal: parts.extensions.get::<Principal>().cloned(),
        address,
        modern,
        capabilities,
        client,
        stream: None,
        trace: traceparent.as_deref().and_then(crate::telemetry::TraceParent::parse),
    }
}

/// What a request's headers ask of the owned path.
#[derive(Debug, PartialEq)]
enum Wanted<'p> {
    /// A request of MCP 2026-07-28, of this method.
    Modern(&'static str),
    /// A request on this stateful session (MCP 2025-11-25 and the revisions before it that
    /// have sessions).
    Session(&'p str),
}

/// The revisions before 2026-07-28 whose requests travel on sessions.
const SESSION_REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// What a request's headers ask, if they are what rmcp would serve as they are: an
/// `Accept` of JSON and SSE (no weights), an allowed `Host` and no `Origin` (rmcp judges
/// those); then either `MCP-Protocol-Version: 2026-07-28` with no session id, no
/// `Mcp-Param-*` header and one `Mcp-Method` of `tools/call` or `tools/list`, or a revision
/// with sessions and one session id.
fn recognized_headers<'p>(parts: &'p http::request::Parts, hosts: Option<&[AllowedHost]>) -> Option<Wanted<'p>> {
    let headers = &parts.headers;
    if headers.contains_key(http::header::ORIGIN)
        || !accepts_json_and_sse(headers)
        || !hosts.is_none_or(|hosts| host_allowed(parts, hosts))
    {
        return None;
    }
    let version = one_header(parts, &MCP_PROTOCOL_VERSION)?;
    if version == REVISION {
        let method = match one_header(parts, &MCP_METHOD)? {
            "tools/call" => "tools/call",
            "tools/list" => "tools/list",
            _ => return None,
        };
        if headers.contains_key(&MCP_SESSION_ID) || headers.keys().any(|name| name.as_str().starts_with("mcp-param-")) {
            return None;
        }
        return Some(Wanted::Modern(method));
    }
    SESSION_REVISIONS.contains(&version).then_some(())?;
    Some(Wanted::Session(one_header(parts, &MCP_SESSION_ID)?))
}

static MCP_METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");
static MCP_NAME: http::HeaderName = http::HeaderName::from_static("mcp-name");
static MCP_PROTOCOL_VERSION: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");
static MCP_SESSION_ID: http::HeaderName = http::HeaderName::from_static("mcp-session-id");

/// The one value of header `name`, as text.
fn one_header<'p>(parts: &'p http::request::Parts, name: &http::HeaderName) -> Option<&'p str> {
    let mut values = parts.headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(())?;
    value.to_str().ok()
}

/// `Accept` names both `application/json` and `text/event-stream`, with no parameters.
fn accepts_json_and_sse(headers: &http::HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        for media in value.split(',') {
            let media = media.trim();
            if media.contains(';') || media.contains('"') {
                return false;
            }
            json |= media.eq_ignore_ascii_case("application/json");
            sse |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// rmcp's DNS-rebinding rule for the `Host` header: its host is one of `allowed`, with the
/// port the entry names, if it names one.
fn host_allowed(parts: &http::request::Parts, allowed: &[AllowedHost]) -> bool {
    let Some(host) = one_header(parts, &http::header::HOST).and_then(|h| h.parse::<http::uri::Authority>().ok()) else {
        return false;
    };
    let (name, port) = (host.host().trim_matches(['[', ']']), host.port_u16());
    allowed.iter().any(|entry| entry.name.eq_ignore_ascii_case(name) && entry.port.is_none_or(|p| port == Some(p)))
}

/// An id rmcp echoes byte for byte: an integer (no fraction or exponent; not `-0`, which
/// rmcp echoes as `0`) or a string without escapes.
fn plain_id(id: &RawValue) -> Option<&RawValue> {
    let text = id.get();
    let integer = {
        let digits = text.strip_prefix('-').unwrap_or(text);
        !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) && text != "-0"
    };
    let string =
        text.len() >= 2 && text.starts_with('"') && text.ends_with('"') && !text[1..text.len() - 1].contains('\\');
    (integer || string).then_some(id)
}

/// The one message, as far as the owned path reads it; any member it does not know sends
/// the request to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Incoming<'a> {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: IgnoredAny,
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

/// The params of `tools/call` and `tools/list`, as the owned path serves them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(default)]
    cursor: Option<IgnoredAny>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

/// A request's `_meta`: at 2026-07-28 the revision and the client's capabilities travel
/// in it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    client_capabilities: Option<ClientCapabilities>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    _client_info: Option<IgnoredAny>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    log_level: Option<LoggingLevel>,
    #[serde(rename = "progressToken", default)]
    progress_token: Option<ProgressToken>,
    #[serde(borrow, default)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(rename = "tracestate", default)]
    _tracestate: Option<IgnoredAny>,
}

/// One `tools/call` the owned path serves, owning all it needs (so that, if the client
/// goes away, what is left of it can finish on its own).
struct OwnedCall {
    connection: Connection,
    request: CallRequest,
    /// Of MCP 2026-07-28 (else on a session).
    modern: bool,
    /// Registered with its session for `notifications/cancelled` while it runs.
    _tracked: Option<OwnedCallGuard>,
}

/// How a call ended, for its response.
type Outcome = Result<Served, ErrorData>;

impl OwnedCall {
    async fn answer(self, id: String, cancel: CancellationToken) -> Response {
        let modern = self.modern;
        let (sink, mut caused) = unbounded_channel();
        let mut call = Finishing::new(Box::pin(self.run(sink)), cancel);
        tokio::select! {
            biased;
            outcome = &mut call => {
                let first: Vec<_> = std::iter::from_fn(|| caused.try_recv().ok()).collect();
                if call.cancelled_by_client() {
                    // MCP: a cancelled request gets no response; rmcp ends its stream without one.
                    let events = first.iter().filter_map(|m| serde_json::to_string(m).ok());
                    return sse_response(Body::from(events.map(|e| sse_event(&e)).collect::<String>()));
                }
                let (status, last) = respond(&id, outcome, modern);
                if first.is_empty() {
                    let mut response = json_response(last);
                    *response.status_mut() = status;
                    return response;
                }
                let events = first.iter().filter_map(|m| serde_json::to_string(m).ok()).chain([last]);
                sse_response(Body::from(events.map(|e| sse_event(&e)).collect::<String>()))
            }
            Some(first) = caused.recv() => {
                // Messages before the result: an SSE stream, the call driven by its body.
                let stream = CallEvents { first: Some(first), caused, call: Some(call), id, modern };
                sse_response(Body::from_stream(stream))
            }
        }
    }

    async fn run(self, sink: tokio::sync::mpsc::UnboundedSender<ServerJsonRpcMessage>) -> Outcome {
        let mut request = self.request;
        request.stream = Some(sink);
        let served = self.connection.serve(request).await;
        drop(self._tracked);
        served
    }
}

/// A reply that could not be written: its detail goes to the log, not to the client.
fn internal(error: serde_json::Error) -> ErrorData {
    tracing::error!(%error, "cannot write a reply");
    ErrorData::internal_error("the reply could not be written", None)
}

/// The JSON-RPC response `id` gets for `outcome`, and its HTTP status (`modern`: of a
/// 2026-07-28 request; a session's errors travel with 200, as rmcp sends them).
fn respond(id: &str, outcome: Outcome, modern: bool) -> (http::StatusCode, String) {
    let result = match outcome {
        Ok(Served::Reply(reply)) => result_bytes(reply, modern),
        Ok(Served::Asked(asked)) => serde_json::to_string(&asked).map_err(internal),
        Ok(Served::Task(task)) => serde_json::to_string(&task).map_err(internal),
        Err(error) => Err(error),
    };
    match result {
        Ok(result) => (http::StatusCode::OK, envelope_raw(id, "result", &result)),
        Err(error) => {
            let status = if modern { error_status(&error) } else { http::StatusCode::OK };
            (status, jsonrpc::body(id, &error))
        }
    }
}

/// The HTTP status of a 2026-07-28 request answered with `error`, as rmcp gives it: 400
/// for what the request itself lacks (a client capability, a protocol version, a header
/// that disagrees), 404 for a method this server does not have, else 200.
fn error_status(error: &ErrorData) -> http::StatusCode {
    use rmcp::model::ErrorCode;
    match error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
        _ => http::StatusCode::OK,
    }
}

/// A call's result, its `structuredContent` serialized once and its text block written
/// from those bytes; a handler's own content blocks go through rmcp's model. `modern`: of
/// MCP 2026-07-28, which names the result's type (`resultType`); earlier revisions do not.
fn result_bytes(reply: Reply, modern: bool) -> Result<String, ErrorData> {
    if reply.blocks.is_some() && !reply.is_error {
        let mut result = reply.into_result();
        if !modern {
            result.result_type = None;
        }
        return serde_json::to_string(&result).map_err(internal);
    }
    let structured = serde_json::to_string(&reply.content).map_err(internal)?;
    let text = serde_json::to_string(&structured).map_err(internal)?;
    let mut out = String::with_capacity(structured.len() + text.len() + 96);
    out.push_str(if modern {
        r#"{"resultType":"complete","content":[{"type":"text","text":"#
    } else {
        r#"{"content":[{"type":"text","text":"#
    });
    out.push_str(&text);
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(&structured);
    out.push_str(if reply.is_error { r#","isError":true}"# } else { r#","isError":false}"# });
    Ok(out)
}

fn envelope(id: &RawValue, member: &str, value: &str) -> String {
    envelope_raw(id.get(), member, value)
}

fn envelope_raw(id: &str, member: &str, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + id.len() + 32);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(id);
    out.push_str(",\"");
    out.push_str(member);
    out.push_str("\":");
    out.push_str(value);
    out.push('}');
    out
}

fn json_response(body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    headers.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    // As rmcp's: a proxy (nginx) must pass progress on as it comes, not hold the stream.
    headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}

fn sse_event(data: &str) -> String {
    format!("data: {data}\n\n")
}

type CallFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A call that finishes even if the request's future is dropped (the client went away):
/// its cancellation is fired, and what is left of it runs on in a task of its own, so a
/// call past its handler still commits and keeps its idempotency record, as one rmcp
/// serves does.
struct Finishing {
    call: Option<CallFuture>,
    cancel: CancellationToken,
}

impl Finishing {
    fn new(call: CallFuture, cancel: CancellationToken) -> Self {
        Self { call: Some(call), cancel }
    }

    /// Whether the client cancelled the call (`notifications/cancelled` on its session):
    /// while the call is polled, nothing else fires its token.
    fn cancelled_by_client(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl Future for Finishing {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let Some(call) = self.call.as_mut() else { return Poll::Pending };
        let outcome = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(outcome)
    }
}

impl Drop for Finishing {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.cancel.cancel();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(call);
            }
        }
    }
}

/// The SSE body of a call that sent messages before its result: those messages as they
/// come, then the result, the call driven by the body's polling.
struct CallEvents {
    first: Option<ServerJsonRpcMessage>,
    caused: UnboundedReceiver<ServerJsonRpcMessage>,
    call: Option<Finishing>,
    id: String,
    modern: bool,
}

impl Stream for CallEvents {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let event = |message: &ServerJsonRpcMessage| {
            Some(Ok(Bytes::from(sse_event(&serde_json::to_string(message).unwrap_or_default()))))
        };
        if let Some(first) = self.first.take() {
            return Poll::Ready(event(&first));
        }
        if let Poll::Ready(Some(message)) = self.caused.poll_recv(cx) {
            return Poll::Ready(event(&message));
        }
        let Some(call) = self.call.as_mut() else { return Poll::Ready(None) };
        let outcome = std::task::ready!(Pin::new(&mut *call).poll(cx));
        let cancelled = call.cancelled_by_client();
        self.call = None;
        if cancelled {
            // No response to a cancelled request: what it sent before, then the end.
            let mut events = String::new();
            while let Ok(message) = self.caused.try_recv() {
                events.push_str(&sse_event(&serde_json::to_string(&message).unwrap_or_default()));
            }
            return Poll::Ready((!events.is_empty()).then(|| Ok(Bytes::from(events))));
        }
        // What the call sent last, before its result.
        if let Ok(message) = self.caused.try_recv() {
            let (_, last) = respond(&self.id, outcome, self.modern);
            let mut events = sse_event(&serde_json::to_string(&message).unwrap_or_default());
            while let Ok(message) = self.caused.try_recv() {
                events.push_str(&sse_event(&serde_json::to_string(&message).unwrap_or_default()));
            }
            events.push_str(&sse_event(&last));
            return Poll::Ready(Some(Ok(Bytes::from(events))));
        }
        let (_, last) = respond(&self.id, outcome, self.modern);
        Poll::Ready(Some(Ok(Bytes::from(sse_event(&last)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut request = http::Request::builder().method("POST").uri("/mcp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    const USUAL: [(&str, &str); 4] = [
        ("host", "127.0.0.1:8080"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];

    fn hosts(entries: &[&str]) -> Vec<AllowedHost> {
        entries.iter().filter_map(|entry| AllowedHost::parse(entry)).collect()
    }

    fn with(change: (&str, &str)) -> http::request::Parts {
        let mut headers: Vec<_> = USUAL.iter().copied().filter(|(name, _)| *name != change.0).collect();
        headers.push(change);
        parts(&headers)
    }

    #[test]
    fn the_usual_headers_are_recognized_and_any_other_goes_to_rmcp() {
        let loopback = hosts(&["localhost", "127.0.0.1", "::1"]);
        let modern = |method| Some(Wanted::Modern(method));
        assert_eq!(recognized_headers(&parts(&USUAL), Some(&loopback)), modern("tools/call"));
        assert_eq!(recognized_headers(&with(("mcp-method", "tools/list")), Some(&loopback)), modern("tools/list"));
        let mut session = with(("mcp-protocol-version", "2025-11-25"));
        session.headers.insert("mcp-session-id", http::HeaderValue::from_static("s-1"));
        assert_eq!(recognized_headers(&session, Some(&loopback)), Some(Wanted::Session("s-1")));
        for declined in [
            ("mcp-method", "resources/read"),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", "2024-11-05"),
            ("accept", "application/json"),
            ("accept", "application/json;q=0, text/event-stream"),
            ("accept", "*/*"),
            ("host", "evil.example"),
            ("origin", "http://localhost:9"),
            ("mcp-session-id", "abc"),
            ("mcp-param-region", "eu"),
        ] {
            assert_eq!(recognized_headers(&with(declined), Some(&loopback)), None, "{declined:?}");
        }
        let mut twice = parts(&USUAL);
        twice.headers.append("mcp-method", http::HeaderValue::from_static("tools/call"));
        assert_eq!(recognized_headers(&twice, Some(&loopback)), None, "a header twice");
        assert_eq!(recognized_headers(&with(("host", "anything.example")), None), modern("tools/call"), "any host");
    }

    #[test]
    fn hosts_are_matched_as_rmcp_matches_them() {
        let allowed = hosts(&["Example.com", "api.example.com:8443", "[::1]"]);
        let host = |value| host_allowed(&parts(&[("host", value)]), &allowed);
        assert!(host("example.com") && host("EXAMPLE.com:1234") && host("[::1]:80"));
        assert!(host("api.example.com:8443") && !host("api.example.com:8444") && !host("api.example.com"));
        assert!(!host("example.org") && !host("not a host"));
        assert!(!host_allowed(&parts(&[]), &allowed), "no Host header");
    }

    #[test]
    fn only_ids_rmcp_echoes_byte_for_byte_are_served() {
        let id = |text: &str| serde_json::from_str::<Box<RawValue>>(text).unwrap();
        for served in ["1", "-42", "\"abc\"", "\"\""] {
            assert!(plain_id(&id(served)).is_some(), "{served}");
        }
        for declined in ["1.0", "1e3", "\"a\\\"b\"", "12345678901234567890"] {
            assert!(plain_id(&id(declined)).is_none(), "{declined}");
        }
    }
}

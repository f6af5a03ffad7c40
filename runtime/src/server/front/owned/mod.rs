//! The front's sixth layer, the owned path: the requests toolgate answers itself over
//! Streamable HTTP. A `tools/call` or a `tools/list` of MCP 2026-07-28 (sessionless, in
//! either server mode), and a `tools/call` on a stateful session, go from the JSON check's
//! bytes to [`Connection::serve`] and back
//! to response bytes written here, without rmcp's per-request machinery (a handler built
//! and a task spawned per request, the message parsed again into rmcp's model, the result
//! serialized twice). A `subscriptions/listen` of MCP 2026-07-28 is held open here too
//! ([`listen`]): an SSE body that writes what the server's register hands its inbox,
//! without rmcp's service, task and channels for each open stream.
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

mod listen;
mod recognize;
mod reply;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use axum::response::Response;
use rmcp::model::{ClientCapabilities, ClientJsonRpcMessage, ClientNotification};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::SessionId;

use super::json_check::{Answered, Checked};
use super::rmcp::CallStreamSessions;
use super::streams::StreamCap;
use crate::action::{RequestSide, TaskSupport};
use crate::auth::Principal;
use crate::client::{ClientLink, NoClient};
use crate::server::accept::AllowedHost;
use crate::server::connection::CallRequest;
use crate::server::rmcp_client::RmcpClient;
use crate::server::{Connection, Shared};
use listen::ListenEvents;
use recognize::{Incoming, MCP_NAME, Params, REVISION, Wanted, one_header, plain_id, recognized_headers};
use reply::{OwnedCall, envelope, json_response, sse_response};

/// What the owned path needs beside the server: made on the first request it serves.
pub(crate) struct OwnedPath {
    shared: Arc<Shared>,
    /// The allowed `Host`s, parsed once: `None` for any host.
    hosts: Option<Vec<AllowedHost>>,
    /// The sessions of a stateful server, whose calls the owned path may serve.
    sessions: Option<Arc<CallStreamSessions>>,
    /// The caps on listening streams, which rmcp's streams count against too.
    streams: Arc<StreamCap>,
    ready: OnceLock<Ready>,
}

struct Ready {
    /// What serves a sessionless call here: a connection the server does not keep.
    connection: Connection,
    /// How its calls reach their client: they do not (an MCP 2026-07-28 call asks in
    /// rounds, and its messages go to its own response stream).
    link: Arc<dyn ClientLink>,
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

/// The layer: a checked message (not one that opens a session) that the owned path
/// recognizes is answered here; anything else goes on to rmcp unchanged. A plain
/// tower layer: a request that cannot be the owned path's passes with no future boxed, and
/// one the owned path answers never reaches the router's handler (each hop moves a
/// request's future whole).
#[derive(Clone)]
pub(crate) struct OwnedLayer(pub(crate) Arc<OwnedPath>);

impl<S> tower::Layer<S> for OwnedLayer {
    type Service = ServeOwned<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ServeOwned { owned: self.0.clone(), inner }
    }
}

/// [`OwnedLayer`]'s service.
#[derive(Clone)]
pub(crate) struct ServeOwned<S> {
    owned: Arc<OwnedPath>,
    inner: S,
}

impl<S> tower::Service<axum::extract::Request> for ServeOwned<S>
where
    S: tower::Service<axum::extract::Request, Response = Response, Error = std::convert::Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures_util::future::Either<S::Future, Answered>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        let candidate = request.extensions().get::<Checked>().is_some_and(|c| !c.initializes);
        if !candidate {
            return futures_util::future::Either::Left(self.inner.call(request));
        }
        // The service made ready goes with the request; a clone stays for the next one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let owned = self.owned.clone();
        futures_util::future::Either::Right(Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = parts.extensions.get::<Checked>().map(|checked| checked.bytes.clone()).unwrap_or_default();
            match owned.answer(&parts, &bytes).await {
                Some(response) => Ok(response),
                None => inner.call(axum::extract::Request::from_parts(parts, body)).await,
            }
        }))
    }
}

impl OwnedPath {
    pub(crate) fn new(shared: Arc<Shared>, sessions: Option<Arc<CallStreamSessions>>, streams: Arc<StreamCap>) -> Self {
        let allowed = &shared.http.allowed_hosts;
        let hosts = (!allowed.is_empty()).then(|| AllowedHost::all(allowed));
        Self { shared, hosts, sessions, streams, ready: OnceLock::new() }
    }

    fn ready(&self) -> &Ready {
        self.ready.get_or_init(|| {
            let connection = Connection::new(self.shared.clone(), false);
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
            Ready { connection, link: Arc::new(NoClient), callable, session_callable, list }
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
                    "tools/list" => (method, self.list(id, parts, params).await?),
                    "subscriptions/listen" => (method, self.listen(id, parts, params)?),
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

    /// A `tools/list` of MCP 2026-07-28, through the one list every transport answers
    /// ([`Connection::list`]): written once when it is the same for everyone.
    async fn list(&self, id: &RawValue, parts: &http::request::Parts, params: Params<'_>) -> Option<Response> {
        if params.name.is_some()
            || params.arguments.is_some()
            || params.cursor.is_some()
            || params.notifications.is_some()
        {
            return None;
        }
        let ready = self.ready();
        let result = match &ready.list {
            Some(list) => Cow::Borrowed(list.as_str()),
            None => {
                let principal = parts.extensions.get::<Principal>();
                Cow::Owned(serde_json::to_string(&ready.connection.list(principal, true).await.ok()?).ok()?)
            }
        };
        Some(json_response(envelope(id, "result", &result)))
    }

    /// A `tools/call` of MCP 2026-07-28, served by a connection the server does not keep.
    async fn modern_call(&self, id: &RawValue, parts: &http::request::Parts, params: Params<'_>) -> Option<Response> {
        let name = params.name?;
        if params.cursor.is_some() || params.notifications.is_some() || one_header(parts, &MCP_NAME)? != name {
            return None;
        }
        let ready = self.ready();
        if !ready.callable.contains(name.as_ref()) {
            return None;
        }
        let meta = params.meta?;
        let cancel = CancellationToken::new();
        let client = RequestSide {
            link: ready.link.clone(),
            progress_token: meta.progress_token,
            log_level: meta.log_level,
            cancel: cancel.clone(),
        };
        let capabilities = meta.client_capabilities.unwrap_or_default();
        let request = call_request(parts, name, params.arguments, (true, capabilities), client, meta.traceparent);
        let call = OwnedCall { connection: ready.connection.clone(), request, modern: true, _tracked: None };
        Some(call.answer(id.get().to_string(), cancel).await)
    }

    /// A `subscriptions/listen` of MCP 2026-07-28: a place under the caps (503 past them),
    /// the stream registered with what the server honours of its filter, then its SSE body.
    fn listen(&self, id: &RawValue, parts: &http::request::Parts, params: Params<'_>) -> Option<Response> {
        if params.name.is_some() || params.arguments.is_some() || params.cursor.is_some() {
            return None;
        }
        let requested = params.notifications?;
        let request_id: rmcp::model::RequestId = serde_json::from_str(id.get()).ok()?;
        let place = match self.streams.open(parts) {
            Ok(place) => place,
            Err(full) => return Some(full.answer(serde_json::from_str(id.get()).ok()?)),
        };
        let connection = &self.ready().connection;
        let honoured = connection.honoured(&requested);
        let accepted = listen::accepted(&requested, &honoured, &rmcp::ServerHandler::get_info(connection).capabilities);
        let principal = parts.extensions.get::<Principal>();
        let uris = accepted.resource_subscriptions.iter().flatten();
        let resources = uris.filter_map(|uri| connection.subscription(uri.clone(), principal)).collect();
        let registered = self.shared.listeners.listen_owned(&accepted, resources);
        let events = ListenEvents::new(self.shared.clone(), request_id, accepted, registered, place);
        Some(sse_response(axum::body::Body::from_stream(events)))
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
            || params.notifications.is_some()
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
        let link = Arc::new(RmcpClient(peer));
        let client = RequestSide { link, progress_token, log_level: None, cancel: cancel.clone() };
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

//! [`Connection`]: rmcp's `ServerHandler` for one client connection — stdio, one stateful
//! Streamable HTTP session, or one sessionless request.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptsCapability,
    ReadResourceRequestParams, ReadResourceResponse, ResourcesCapability, ServerCapabilities, ServerConfig,
    ServerNotification, SubscribeRequestParams, Tool, ToolListChangedNotification, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;

use super::Shared;
use super::front::CallSink;
use super::rounds::Retry;
use crate::action::{CallClient, LogThreshold, RequestSide, TaskSupport};
use crate::auth::Principal;
use crate::engine::{CallSource, Reply, Started, TaskCall, TaskError};
use crate::engine::{SessionFocus, focus_states};
use crate::flow::Origin;
use crate::gate::{self, Caller, Gate, Peer};
use crate::store::StoreKey;

mod catalog;
mod watch;

/// Serves one client connection. A connection the server keeps (stdio, or a stateful
/// HTTP session, which it knows by the `initialize` that created it) has a flow of its own
/// and a per-connection tool list; a sessionless request (rmcp builds a fresh handler per
/// request) has neither: its flow comes from a handle, and it lists every tool.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    state: Arc<ConnectionState>,
}

pub(crate) struct ConnectionState {
    shared: Arc<Shared>,
    /// Random, so no client can name it and replicas sharing a store never collide; made
    /// when first needed (a sessionless request, served by a handler of its own, never
    /// needs one).
    id: std::sync::OnceLock<String>,
    /// Whether the server keeps this connection (stdio, or a session it initialized).
    kept: AtomicBool,
    focus: SessionFocus,
    /// The focus's move count when this session last watched its focus instances.
    watched_moves: std::sync::atomic::AtomicU64,
    /// The lowest log level the client asked for.
    log_threshold: LogThreshold,
    /// The principal that opened the session, for its listings when another session's
    /// commit moves an instance it lists from.
    opener: std::sync::OnceLock<Option<Principal>>,
    /// The client, for notifications no call of its own causes.
    peer: std::sync::OnceLock<rmcp::service::Peer<RoleServer>>,
    /// The names its latest `tools/list` (or notification) showed, to tell it only of a
    /// change; `None` before it listed.
    listed: std::sync::Mutex<Option<Vec<String>>>,
    /// One refresh at a time, so two commits never both tell it of one change.
    refreshing: tokio::sync::Mutex<()>,
    /// The resources it subscribed to (`resources/subscribe`, MCP 2025-11-25), each with
    /// the instance it names, for a template bound to instances.
    subscribed: std::sync::Mutex<BTreeMap<String, Option<StoreKey>>>,
    /// Cancelled when the transport ends (stdin closed): its listening streams stop. Made
    /// only for a transport that says when it ends (stdio).
    ended: std::sync::OnceLock<tokio_util::sync::CancellationToken>,
    /// The calls the owned path serves on this session, by request id, for the client's
    /// `notifications/cancelled` (which rmcp hands to `on_cancelled`).
    owned_calls:
        std::sync::Mutex<std::collections::HashMap<rmcp::model::RequestId, tokio_util::sync::CancellationToken>>,
    /// When the owned path last told rmcp's session that it is in use (ms since the epoch):
    /// rmcp closes a session idle for its timeout, and sees none of the calls served here.
    owned_touch_ms: std::sync::atomic::AtomicU64,
}

/// A kept connection's flow is its own: removed from the store when the connection ends,
/// by this connection only.
impl Drop for ConnectionState {
    fn drop(&mut self) {
        // A connection that never named its flow stored none.
        let (true, Some(id)) = (*self.kept.get_mut(), self.id.get()) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (store, key) = (self.shared.engine.store.clone(), StoreKey::connection(id));
        runtime.spawn(async move {
            if let Err(error) = store.remove(&key).await {
                tracing::warn!(%key, %error, "cannot remove a finished connection's flow");
            }
        });
    }
}

impl ConnectionState {
    fn id(&self) -> &str {
        self.id.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("id", &self.state.id.get()).finish_non_exhaustive()
    }
}

impl Connection {
    /// `kept`: the connection is known to be kept from the start (stdio); an HTTP handler
    /// becomes kept when it initializes a session.
    pub(super) fn new(shared: Arc<Shared>, kept: bool) -> Self {
        let state = ConnectionState {
            shared: shared.clone(),
            id: std::sync::OnceLock::new(),
            kept: AtomicBool::new(kept),
            focus: SessionFocus::default(),
            watched_moves: Default::default(),
            log_threshold: LogThreshold::default(),
            opener: std::sync::OnceLock::new(),
            peer: std::sync::OnceLock::new(),
            listed: std::sync::Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            subscribed: std::sync::Mutex::new(BTreeMap::new()),
            ended: std::sync::OnceLock::new(),
            owned_calls: Default::default(),
            owned_touch_ms: Default::default(),
        };
        Self { shared, state: Arc::new(state) }
    }

    /// Cancelled when this connection's transport ends.
    pub(super) fn ended(&self) -> tokio_util::sync::CancellationToken {
        self.state.ended.get_or_init(tokio_util::sync::CancellationToken::new).clone()
    }

    fn origin(&self) -> Origin {
        if self.state.kept.load(Ordering::Acquire) {
            Origin::Connection(StoreKey::connection(self.state.id()))
        } else {
            Origin::Sessionless
        }
    }

    /// The principal of the request `context` serves. An HTTP request is only ever who its
    /// own credentials say; the configured stdio principal is for connections without HTTP.
    fn principal(&self, context: &RequestContext<RoleServer>) -> Option<Principal> {
        match context.extensions.get::<http::request::Parts>() {
            Some(parts) => parts.extensions.get::<Principal>().cloned(),
            None => self.shared.auth.stdio_principal.clone(),
        }
    }

    /// What a kept connection lists: its flow, with the current state of each instance it
    /// focuses on (another client may have moved it since).
    async fn listing(&self, flow: &StoreKey, principal: Option<&Principal>) -> Result<Vec<Tool>, ErrorData> {
        let store = &self.shared.engine.store;
        let snapshot = store.load(flow).await.map_err(store_unavailable)?;
        let mut focus = self.state.focus.current();
        for (machine, entry) in &mut focus {
            let Some(m) = self.shared.engine.registry.machines().find(|m| m.id() == machine) else { continue };
            let key = gate::instance_key(m, &entry.instance, principal);
            let state = store.load(&key).await.map_err(store_unavailable)?;
            // What time has made due is applied to what is read.
            let state = m.settle(&state, crate::store::now_ms()).map_or(state, |(settled, _)| settled);
            entry.state = state.state_of(machine, m.initial()).to_string();
            self.state.focus.refresh(machine, &entry.instance, &entry.state);
        }
        Ok(Gate::new(&self.shared.engine.registry, &gate::view(&snapshot, focus_states(&focus)))
            .seen_by(principal)
            .tools())
    }
}

/// The server declares exactly what it serves: a method of a capability it does not
/// declare (no prompts, say) is one it does not have (`-32601`), not an empty answer.
fn offered(offered: bool, method: &str) -> Result<(), ErrorData> {
    match offered {
        true => Ok(()),
        false => Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            "Method not found",
            Some(json!({ "method": method })),
        )),
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A `tools/call` as a connection serves it, whoever read it off the wire: rmcp (from its
/// request context), or the owned path (`server::owned`, from the bytes).
pub(crate) struct CallRequest {
    pub(crate) name: String,
    pub(crate) arguments: serde_json::Map<String, serde_json::Value>,
    pub(crate) request_state: Option<String>,
    pub(crate) input_responses: Option<rmcp::model::InputResponses>,
    /// Who its credentials say is calling (HTTP), or the configured stdio principal.
    pub(crate) principal: Option<Principal>,
    /// Its peer address, as the socket reports it (HTTP served with connection info).
    pub(crate) address: Option<std::net::IpAddr>,
    /// Whether it is of MCP 2026-07-28 or later (it asks in rounds, and may run as a task).
    pub(crate) modern: bool,
    pub(crate) capabilities: rmcp::model::ClientCapabilities,
    pub(crate) client: RequestSide,
    /// The call's own response stream, where the transport gave it one.
    pub(crate) stream: Option<tokio::sync::mpsc::UnboundedSender<rmcp::model::ServerJsonRpcMessage>>,
    pub(crate) trace: Option<crate::telemetry::TraceParent>,
}

/// How a `tools/call` ended, before it is written.
pub(crate) enum Served {
    /// The call's reply.
    Reply(Reply),
    /// The call runs as an MCP task.
    Task(rmcp::model::CreateTaskResult),
    /// The handler stopped to ask the client (MCP 2026-07-28).
    Asked(rmcp::model::InputRequiredResult),
}

impl Connection {
    /// `tools/call` as rmcp hands it over.
    async fn serve_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let address = parts
            .and_then(|parts| parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>())
            .map(|info| info.0.ip());
        let call = CallRequest {
            name: request.name.into_owned(),
            arguments: request.arguments.unwrap_or_default(),
            request_state: request.request_state,
            input_responses: request.input_responses,
            principal: self.principal(&context),
            address,
            modern: context.protocol_version().is_some_and(|version| !version.has_initialize()),
            capabilities: context.client_capabilities().unwrap_or_default(),
            client: RequestSide {
                peer: context.peer.clone(),
                progress_token: context.meta.get_progress_token(),
                log_level: context.meta.log_level(),
                cancel: context.ct.clone(),
            },
            stream: context.extensions.get::<CallSink>().map(|sink| sink.0.clone()),
            trace: crate::telemetry::TraceParent::from_meta(&context.meta),
        };
        Ok(match self.serve(call).await? {
            Served::Reply(reply) => reply.into_result().into(),
            Served::Task(task) => CallToolResponse::Task(task),
            Served::Asked(asked) => asked.into(),
        })
    }

    /// `tools/call`: the call through the pipeline, then what it tells whom.
    pub(crate) async fn serve(&self, request: CallRequest) -> Result<Served, ErrorData> {
        let mut arguments = request.arguments;
        let principal = request.principal;
        let tool = match self.shared.tool_called(&request.name, &mut arguments, || principal.clone()) {
            Ok(tool) => tool,
            Err(Uncalled::Refused(reply)) => return Ok(Served::Reply(*reply)),
            Err(Uncalled::Unknown(error)) => return Err(error),
        };
        let origin = self.origin();
        let kept = matches!(origin, Origin::Connection(_));
        let session = kept.then(|| (&self.state.focus, self.state.focus.begin()));
        let peer = match (request.address, &origin) {
            (Some(address), _) => Peer::Address(address),
            (None, Origin::Connection(key)) => Peer::Connection(key.clone()),
            (None, Origin::Sessionless) => Peer::Unidentified,
        };
        let caller = Caller { principal, peer };
        let retry = Retry {
            method: "tools/call",
            name: tool.name.into(),
            request_state: request.request_state,
            input_responses: request.input_responses,
        };
        let (modern, capabilities) = (request.modern, request.capabilities);
        let client_side = (capabilities.clone(), &request.client.peer);
        let round = self.shared.round_of(client_side, modern, kept, caller.principal.as_ref(), &arguments, retry)?;
        let threshold = self.state.log_threshold.clone();
        let client = CallClient::of_request(request.client, threshold, request.stream, round.inputs.clone());
        let trace = request.trace;
        let server = self.shared.this.clone() as std::sync::Weak<dyn std::any::Any + Send + Sync>;
        // Whether the request declared the Tasks extension is read only for a tool that may
        // run as a task.
        let task = tool.task();
        let reply = match (task, task != TaskSupport::Never && modern && capabilities.supports_tasks()) {
            (TaskSupport::Required, false) => {
                let tasks = rmcp::model::ClientCapabilities::builder().enable_tasks().build();
                return Err(ErrorData::missing_required_client_capability(tasks));
            }
            (TaskSupport::Optional | TaskSupport::Required, true) => {
                let shared = Arc::downgrade(&self.shared);
                let call = TaskCall {
                    origin: origin.clone(),
                    caller: caller.clone(),
                    trace,
                    server,
                    client: client.clone(),
                    capabilities,
                    arguments,
                    moved: Box::new(move |key| {
                        if let Some(shared) = shared.upgrade() {
                            shared.tell_watchers(&key, None);
                        }
                    }),
                };
                // Boxed: only a task builds this future, which every call's would carry.
                match Box::pin(self.shared.engine.start_task(tool.name, call)).await.map_err(task_error)? {
                    Started::Task(task) => return Ok(Served::Task(rmcp::model::CreateTaskResult::new(task))),
                    // It never became a task: answered as any call is.
                    Started::Reply(reply) => reply,
                }
            }
            _ => {
                let source = CallSource { origin: &origin, caller: &caller, session, trace, server };
                // Boxed on its own: a future is built on the stack and then moved into its
                // box, so the call's (the pipeline, the handler, the commit) is built once
                // in place here.
                Box::pin(self.shared.engine.call(tool, source, client.clone(), arguments)).await
            }
        };
        if kept {
            self.watch_focus(caller.principal.as_ref());
        }
        // Only this session: other sessions' lists did not change. (At MCP 2026-07-28 a
        // list never changes with a call: it shows every tool the authorization allows.)
        if reply.listing_changed && !round.in_rounds() {
            // On the call's own stream where there is one, ahead of the result that caused it.
            let changed = ToolListChangedNotification { method: Default::default(), extensions: Default::default() };
            client.notify(ServerNotification::ToolListChangedNotification(changed)).await;
        }
        // After this session's own list change, so that its client hears that first and
        // the instance's resource updates (sent by a task of their own) after it.
        if let Some(moved) = &reply.moved {
            self.shared.tell_watchers(moved, kept.then_some(&self.state));
        }
        if reply.is_error
            && let Some(asked) = round.unanswered(&self.shared)
        {
            // The handler stopped to ask the client (MCP 2026-07-28): nothing committed.
            return asked.map(Served::Asked);
        }
        Ok(Served::Reply(reply))
    }
}

/// Keeps of `tools` those `principal` may see (every scope they require).
fn visible_to(shared: &Shared, mut tools: Vec<Tool>, principal: Option<&Principal>) -> Vec<Tool> {
    let registry = &shared.engine.registry;
    tools.retain(|tool| registry.tool(&tool.name).is_none_or(|entry| entry.visible_to(principal)));
    tools
}

impl Shared {
    /// The `tools/list` every caller with `principal`'s authorization gets where the list
    /// does not follow a flow (a sessionless request, any request of MCP 2026-07-28):
    /// every tool it may see, each saying when it is callable (the call path enforces the
    /// state). `modern`: the request is of MCP 2026-07-28.
    pub(super) fn tools_list_result(&self, principal: Option<&Principal>, modern: bool) -> ListToolsResult {
        let tools = visible_to(self, self.engine.registry.definitions(), principal);
        self.list_result(tools, modern)
    }

    /// The result listing `tools` (flat definitions), as this server exposes them.
    fn list_result(&self, tools: Vec<Tool>, modern: bool) -> ListToolsResult {
        let mut result = ListToolsResult::with_all_items(self.engine.registry.expose(tools));
        if self.engine.registry.has_scopes() {
            // The list varies by the authorization the request presents (and by nothing
            // else): no one else may be served it from a cache.
            result.cache_scope = Some(CacheScope::Private);
        } else if modern {
            // The same list for everyone.
            result.cache_scope = Some(CacheScope::Public);
        }
        if modern {
            // Fresh for no time: the list changes with the server's tools only (rmcp's
            // default, written here so a list toolgate writes itself says it too).
            result.ttl_ms = Some(0);
        }
        result
    }
}

/// Why a `tools/call` names no tool to run.
pub(super) enum Uncalled {
    /// A grouped call without one of its tool's actions: refused as a result.
    Refused(Box<Reply>),
    /// No such tool (`-32602`).
    Unknown(ErrorData),
}

impl Shared {
    /// The tool a `tools/call` of `name` runs: a grouped tool's call runs as its action's
    /// tool (the `action` argument, taken out of `arguments`), judged among the actions
    /// the caller (`principal`, asked only for a grouped call) may see.
    pub(super) fn tool_called(
        &self,
        name: &str,
        arguments: &mut serde_json::Map<String, serde_json::Value>,
        principal: impl FnOnce() -> Option<Principal>,
    ) -> Result<&crate::registry::ToolEntry, Uncalled> {
        let registry = &self.engine.registry;
        let tool = match registry.group(name) {
            Some(group) => {
                let principal = principal();
                match group
                    .resolve(arguments, |tool| registry.tool(tool).is_some_and(|t| t.visible_to(principal.as_ref())))
                {
                    Ok(tool) => registry.tool(tool),
                    Err(error) => {
                        let mut content = error.to_structured();
                        crate::domain::field::echo(&mut content, Some(group.domain));
                        return Err(Uncalled::Refused(Box::new(Reply::refusal(content))));
                    }
                }
            }
            None => registry.served(name),
        };
        tool.ok_or_else(|| {
            let name = crate::error::echo::name(name);
            Uncalled::Unknown(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({ "tool": name })),
            ))
        })
    }
}

/// The task methods exist from MCP 2026-07-28 on (rmcp has already refused a client that
/// did not declare the extension in the request).
fn tasks_served<M: rmcp::model::ConstString>(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    match context.protocol_version() {
        Some(version) if version.has_initialize() => Err(ErrorData::method_not_found::<M>()),
        _ => Ok(()),
    }
}

/// A task request refused: an id unknown to this caller (never made, expired, or
/// another's) is `-32602`, as the extension says.
fn task_error(error: TaskError) -> ErrorData {
    match error {
        TaskError::Unknown => ErrorData::invalid_params("unknown task", None),
        TaskError::Store(error) => {
            tracing::warn!(%error, "a task request cannot reach the store");
            ErrorData::internal_error("the state store is unavailable", Some(json!({ "code": "STORE_UNAVAILABLE" })))
        }
        TaskError::Lost => ErrorData::internal_error("the call stopped before it could run as a task", None),
    }
}

fn store_unavailable(error: crate::store::StoreError) -> ErrorData {
    tracing::warn!(%error, "tools/list cannot load the flow");
    ErrorData::internal_error("the flow store is unavailable", Some(json!({ "code": "STORE_UNAVAILABLE" })))
}

impl ServerHandler for Connection {
    #[allow(deprecated)] // logging: deprecated by SEP-2577, still served for the revisions that have it
    fn get_info(&self) -> ServerConfig {
        let catalog = &self.shared.catalog;
        let mut capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_logging().build();
        if catalog.has_resources() {
            let mut resources = ResourcesCapability::default();
            (resources.subscribe, resources.list_changed) = (Some(true), Some(true));
            capabilities.resources = Some(resources);
        }
        if catalog.has_prompts() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if catalog.has_completions() {
            capabilities.completions = Some(Default::default());
        }
        if self.shared.engine.registry.tools().iter().any(|t| t.task() != TaskSupport::Never) {
            let extensions = capabilities.extensions.get_or_insert_with(Default::default);
            extensions.insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        }
        let config = ServerConfig::new(capabilities).with_server_info(self.shared.implementation.clone());
        match &self.shared.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    /// A session starts here: from now on this handler is the session's, and keeps a flow.
    /// (A sessionless legacy `initialize` marks a handler that serves nothing else.)
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.state.kept.store(true, Ordering::Release);
        let opener = self.principal(&context);
        let _ = self.state.opener.set(opener);
        let _ = self.state.peer.set(context.peer.clone());
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // The Tasks extension is served at 2026-07-28 only (a call of an `initialize`d
        // session never becomes a task): it is advertised by `server/discover`, not here.
        if let Some(extensions) = result.capabilities.extensions.as_mut() {
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                result.capabilities.extensions = None;
            }
        }
        if self.shared.sessionless {
            // A sessionless server has no stream to send a 2025-11-25 client a
            // notification on (2026-07-28 clients hear them on `subscriptions/listen`).
            let capabilities = &mut result.capabilities;
            if let Some(tools) = capabilities.tools.as_mut() {
                tools.list_changed = None;
            }
            if let Some(prompts) = capabilities.prompts.as_mut() {
                prompts.list_changed = None;
            }
            if let Some(resources) = capabilities.resources.as_mut() {
                resources.list_changed = None;
                resources.subscribe = None;
            }
        } else {
            let mut sessions = lock(&self.shared.sessions);
            // Closed sessions leave as new ones come: the list stays as long as the live ones.
            sessions.retain(|session| session.strong_count() > 0);
            sessions.push(Arc::downgrade(&self.state));
            if let Some(super::front::SessionTag(id)) = context.extensions.get() {
                let mut by_id = lock(&self.shared.by_session_id);
                by_id.retain(|_, session| session.strong_count() > 0);
                by_id.insert(id.clone(), Arc::downgrade(&self.state));
            }
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = self.principal(&context);
        // MCP 2026-07-28 (over any transport, stdio included): the list must not vary per
        // connection or with other requests, only with the authorization presented.
        let modern = context.protocol_version().is_some_and(|version| !version.has_initialize());
        let flow = match self.origin() {
            Origin::Connection(flow) if !modern => flow,
            // The same for every caller with the same authorization: every tool it may
            // see, each saying when it is callable (the call path enforces the state).
            _ => return Ok(self.shared.tools_list_result(principal.as_ref(), modern)),
        };
        let tools = visible_to(&self.shared, self.listing(&flow, principal.as_ref()).await?, principal.as_ref());
        if self.state.kept.load(Ordering::Acquire) {
            *lock(&self.state.listed) = Some(tools.iter().map(|t| t.name.to_string()).collect());
        }
        Ok(self.shared.list_result(tools, false))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        tasks_served::<rmcp::model::GetTaskMethod>(&context)?;
        let principal = self.principal(&context);
        let task = self.shared.engine.task(&request.task_id, principal.as_ref()).await.map_err(task_error)?;
        Ok(rmcp::model::GetTaskResult::new(task))
    }

    /// `tasks/update`: the client's answers to the questions a task waits for.
    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks_served::<rmcp::model::UpdateTaskMethod>(&context)?;
        let principal = self.principal(&context);
        let engine = &self.shared.engine;
        engine.update_task(&request.task_id, principal.as_ref(), request.input_responses).await.map_err(task_error)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks_served::<rmcp::model::CancelTaskMethod>(&context)?;
        let principal = self.principal(&context);
        self.shared.engine.cancel_task(&request.task_id, principal.as_ref()).await.map_err(task_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: rmcp's request future is as large as the largest handler's, and is moved
        // whole into a task for every request (callgrind: `memcpy` under
        // `tokio::task::spawn`); boxed, each handler adds a pointer to it.
        Box::pin(self.serve_call(request, context)).await
    }

    /// `logging/setLevel`: the lowest level of the messages handlers send this client.
    #[allow(deprecated)] // logging is deprecated by SEP-2577, still served for the revisions that have it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state.log_threshold.set(request.level);
        Ok(())
    }

    /// A request rmcp could not read as any method it knows lands here: for a method this
    /// server serves, its params were wrong (`-32602`, saying which member); otherwise the
    /// method does not exist (`-32601`).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        // MCP 2026-07-28 removed the handshake and the methods that need a session.
        let removed = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];
        let modern = context.protocol_version().is_some_and(|version| !version.has_initialize());
        let problem = (!modern || !removed.contains(&request.method.as_str()))
            .then(|| super::wire::invalid_params(&request.method, request.params.clone().unwrap_or_default()))
            .flatten();
        Err(match problem {
            Some(problem) => ErrorData::invalid_params(
                format!("invalid params for `{}`: {problem}", request.method),
                Some(json!({ "method": request.method })),
            ),
            None => ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                Some(json!({ "method": request.method })),
            ),
        })
    }

    /// `subscriptions/listen` (2026-07-28): whatever this server advertises may be heard
    /// (rmcp narrows the request to it).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        // Only resources this server has (which of them a principal may read, `listen`
        // sees); a URI it does not know is dropped from the acknowledgement.
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| self.shared.knows(uri));
        }
        // rmcp acknowledges the stream next and registers it after: keep what changes
        // meanwhile for it.
        self.shared.listeners.opening();
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed: see `call_tool`.
        Box::pin(self.listening(context)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        offered(self.shared.catalog.has_resources(), "resources/list")?;
        let principal = self.principal(&context);
        Ok(self.shared.list_resources(principal.as_ref()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        offered(self.shared.catalog.has_resources(), "resources/templates/list")?;
        let principal = self.principal(&context);
        Ok(self.shared.list_resource_templates(principal.as_ref()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        offered(self.shared.catalog.has_resources(), "resources/read")?;
        let principal = self.principal(&context);
        // Boxed: see `call_tool`.
        Ok(Box::pin(self.shared.read_resource(&request.uri, principal.as_ref())).await?.into())
    }

    /// `resources/subscribe` (MCP 2025-11-25 sessions): the session hears
    /// `notifications/resources/updated` for `uri` — for an instance's resource, whenever a
    /// call moves the instance.
    #[allow(deprecated)] // legacy-only since 2026-07-28, still served to the revisions that have it
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        offered(self.shared.catalog.has_resources(), "resources/subscribe")?;
        let principal = self.principal(&context);
        let (uri, instance) = self.subscription(request.uri.clone(), principal.as_ref()).ok_or_else(|| {
            let uri = crate::error::echo::name(&request.uri);
            ErrorData::resource_not_found(format!("no resource `{uri}`"), Some(json!({ "uri": uri })))
        })?;
        if let Some(key) = &instance {
            self.shared.resource_watchers.watch(key.clone(), &self.state);
        }
        lock(&self.state.subscribed).insert(uri, instance);
        Ok(())
    }

    #[allow(deprecated)] // legacy-only since 2026-07-28, still served to the revisions that have it
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        offered(self.shared.catalog.has_resources(), "resources/unsubscribe")?;
        lock(&self.state.subscribed).remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        offered(self.shared.catalog.has_prompts(), "prompts/list")?;
        let principal = self.principal(&context);
        Ok(self.shared.list_prompts(principal.as_ref()))
    }

    /// `prompts/get`; a prompt that asks the client runs in rounds like a tool call.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        offered(self.shared.catalog.has_prompts(), "prompts/get")?;
        // Boxed: see `call_tool`.
        Box::pin(self.prompt_get(request, context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        offered(self.shared.catalog.has_completions(), "completion/complete")?;
        let principal = self.principal(&context);
        self.shared.complete(&request, principal.as_ref())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.engine.registry.definition(name)
    }

    /// A call the owned path serves on this session is cancelled here (rmcp's own are
    /// cancelled before this is called).
    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id
            && let Some(call) = lock(&self.state.owned_calls).remove(id)
        {
            call.cancel();
        }
    }
}

/// A call the owned path serves on a session, registered for `notifications/cancelled`
/// while it runs.
pub(crate) struct OwnedCallGuard {
    state: Arc<ConnectionState>,
    id: rmcp::model::RequestId,
}

impl Drop for OwnedCallGuard {
    fn drop(&mut self) {
        lock(&self.state.owned_calls).remove(&self.id);
    }
}

impl Shared {
    /// The live session rmcp calls `id`, as a connection, once it initialized.
    pub(crate) fn session_connection(self: &Arc<Self>, id: &str) -> Option<Connection> {
        let state = lock(&self.by_session_id).get(id)?.upgrade()?;
        state.peer.get()?;
        Some(Connection { shared: self.clone(), state })
    }
}

impl Connection {
    /// The client of this session: its peer, and the capabilities it declared.
    pub(crate) fn session_client(&self) -> Option<(rmcp::service::Peer<RoleServer>, rmcp::model::ClientCapabilities)> {
        let peer = self.state.peer.get()?.clone();
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        Some((peer, capabilities))
    }

    /// Whether rmcp's session should hear that it is in use (at most every 10 s, or a
    /// quarter of the idle timeout if that is shorter): the owned path's calls never reach
    /// it, and it closes a session idle for its timeout.
    pub(crate) fn due_for_touch(&self) -> bool {
        let now = crate::store::now_ms();
        let every = (self.shared.http.session_idle_timeout.as_millis() as u64 / 4).min(10_000);
        let last = self.state.owned_touch_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= every
            && self.state.owned_touch_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Registers a call the owned path serves on this session under its request `id`, so
    /// that the client can cancel it; unregistered when the guard drops.
    pub(crate) fn track(
        &self,
        id: rmcp::model::RequestId,
        cancel: tokio_util::sync::CancellationToken,
    ) -> OwnedCallGuard {
        lock(&self.state.owned_calls).insert(id.clone(), cancel);
        OwnedCallGuard { state: self.state.clone(), id }
    }
}

impl Connection {
    /// Holds an acknowledged stream open, registered with the server, until the client
    /// closes it or the transport ends.
    async fn listening(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let principal = self.principal(context.request_context());
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let resources = uris.into_iter().filter_map(|uri| self.subscription(uri, principal.as_ref())).collect();
        let _listening = self.shared.listeners.listen(context.sink().clone(), resources).await;
        match self.state.ended.get() {
            Some(ended) => tokio::select! {
                () = context.cancelled() => {}
                () = ended.cancelled() => {}
            },
            None => context.cancelled().await,
        }
        Ok(())
    }
}

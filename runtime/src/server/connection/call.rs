//! The one call path: what rmcp's `tools/call` and the owned path both call
//! ([`Connection::serve`]), and the tool lists a connection answers.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, ListToolsResult, ServerNotification, Tool,
    ToolListChangedNotification,
};
use rmcp::service::RequestContext;
use serde_json::json;

use super::errors::task_error;
use super::state::{CallSink, Connection};
use crate::action::{CallClient, RequestSide, TaskSupport};
use crate::auth::Principal;
use crate::engine::{CallSource, Reply, Started, TaskCall};
use crate::flow::Origin;
use crate::gate::{Peer, Requester};
use crate::server::Shared;
use crate::server::rmcp_client::RmcpClient;
use crate::server::rounds::Retry;

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
    pub(super) async fn serve_call(
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
                link: Arc::new(RmcpClient(context.peer.clone())),
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
        let caller = Requester { principal, peer };
        let retry = Retry {
            method: "tools/call",
            name: tool.name.into(),
            request_state: request.request_state,
            input_responses: request.input_responses,
        };
        let (modern, capabilities) = (request.modern, request.capabilities);
        let client_side = (capabilities.clone(), &request.client.link);
        let round = self.shared.round_of(client_side, modern, kept, caller.principal.as_ref(), &arguments, retry)?;
        let threshold = self.state.log_threshold.clone();
        let client = CallClient::of_request(request.client, threshold, request.stream, round.inputs.clone());
        let trace = request.trace;
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
                let source = CallSource { origin: &origin, caller: &caller, session, trace };
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

impl Connection {
    /// `tools/list`, whoever read it off the wire (rmcp, or the owned path): on a kept
    /// connection of MCP 2025-11-25, what its flow and focus let `principal` see now
    /// (remembered, to tell it only of a change); else the list every caller with the same
    /// authorization gets. `modern`: the request is of MCP 2026-07-28, whose list must not
    /// vary per connection or with other requests, only with the authorization presented.
    pub(crate) async fn list(&self, principal: Option<&Principal>, modern: bool) -> Result<ListToolsResult, ErrorData> {
        let flow = match self.origin() {
            Origin::Connection(flow) if !modern => flow,
            // The same for every caller with the same authorization: every tool it may
            // see, each saying when it is callable (the call path enforces the state).
            _ => return Ok(self.shared.tools_list_result(principal, modern)),
        };
        let tools = self.listing(&flow, principal).await?;
        if self.state.kept.load(std::sync::atomic::Ordering::Acquire) {
            *super::state::lock(&self.state.listed) = Some(tools.iter().map(|t| t.name.to_string()).collect());
        }
        Ok(self.shared.list_result(tools, false))
    }
}

impl Shared {
    /// The `tools/list` every caller with `principal`'s authorization gets where the list
    /// does not follow a flow (a sessionless request, any request of MCP 2026-07-28):
    /// every tool it may see, each saying when it is callable (the call path enforces the
    /// state). `modern`: the request is of MCP 2026-07-28.
    pub(in crate::server) fn tools_list_result(&self, principal: Option<&Principal>, modern: bool) -> ListToolsResult {
        let tools = visible_to(self, self.engine.registry.definitions(), principal);
        self.list_result(tools, modern)
    }

    /// The result listing `tools` (flat definitions), as this server exposes them.
    pub(super) fn list_result(&self, tools: Vec<Tool>, modern: bool) -> ListToolsResult {
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
pub(in crate::server) enum Uncalled {
    /// A grouped call without one of its tool's actions: refused as a result.
    Refused(Box<Reply>),
    /// No such tool (`-32602`).
    Unknown(ErrorData),
}

impl Shared {
    /// The tool a `tools/call` of `name` runs: a grouped tool's call runs as its action's
    /// tool (the `action` argument, taken out of `arguments`), judged among the actions
    /// the caller (`principal`, asked only for a grouped call) may see.
    pub(in crate::server) fn tool_called(
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

/// Keeps of `tools` those `principal` may see (every scope they require).
fn visible_to(shared: &Shared, mut tools: Vec<Tool>, principal: Option<&Principal>) -> Vec<Tool> {
    let registry = &shared.engine.registry;
    tools.retain(|tool| registry.tool(&tool.name).is_none_or(|entry| entry.visible_to(principal)));
    tools
}

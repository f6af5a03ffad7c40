//! [`Connection`]: rmcp's `ServerHandler` for one client connection.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;

use super::Shared;
use crate::flow::FlowKey;
use crate::gate::Gate;

/// Serves one client connection: stdio, or one stateful Streamable HTTP session.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    id: u64,
    owned_flows: Arc<OwnedFlows>,
}

/// The flows keyed by this connection or its session; removed from the store when the
/// last clone of the connection drops (the client disconnected or the session ended).
struct OwnedFlows {
    shared: Arc<Shared>,
    keys: Mutex<HashSet<FlowKey>>,
}

impl Drop for OwnedFlows {
    fn drop(&mut self) {
        let keys: Vec<FlowKey> = self.keys.get_mut().map(|k| k.drain().collect()).unwrap_or_default();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let store = self.shared.store.clone();
        runtime.spawn(async move {
            for key in keys {
                if let Err(error) = store.remove(&key).await {
                    tracing::warn!(%key, %error, "cannot remove a finished connection's flow");
                }
            }
        });
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Connection {
    pub(super) fn new(shared: Arc<Shared>, id: u64) -> Self {
        let owned_flows = Arc::new(OwnedFlows { shared: shared.clone(), keys: Mutex::default() });
        Self { shared, id, owned_flows }
    }

    /// The flow a request belongs to: its `Mcp-Session-Id` over stateful HTTP, else
    /// this connection.
    fn flow_key(&self, context: &RequestContext<RoleServer>) -> FlowKey {
        let key = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .map_or_else(|| FlowKey::connection(self.id), FlowKey::session);
        // Remember it, so the flow is removed when this connection ends.
        if let Ok(mut keys) = self.owned_flows.keys.lock()
            && !keys.contains(&key)
        {
            keys.insert(key.clone());
        }
        key
    }
}

impl ServerHandler for Connection {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let config = ServerConfig::new(capabilities).with_server_info(self.shared.implementation.clone());
        match &self.shared.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let flow = self.flow_key(&context);
        let snapshot = self.shared.store.load(&flow).await.map_err(|error| {
            ErrorData::internal_error(
                format!("cannot load the flow: {error}"),
                Some(json!({ "code": "STORE_UNAVAILABLE" })),
            )
        })?;
        Ok(ListToolsResult::with_all_items(Gate::new(&self.shared.registry, &snapshot).tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.shared.registry.tool(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                Some(json!({ "tool": request.name })),
            ));
        };
        let flow = self.flow_key(&context);
        let arguments = request.arguments.unwrap_or_default();
        let reply = self.shared.call(tool, flow, arguments).await;
        if reply.listing_changed {
            // Only this session's peer: other sessions' lists did not change.
            if let Err(error) = context.peer.notify_tool_list_changed().await {
                tracing::warn!(%error, "cannot send notifications/tools/list_changed");
            }
        }
        let result = if reply.is_error {
            CallToolResult::structured_error(reply.content)
        } else {
            CallToolResult::structured(reply.content)
        };
        Ok(result.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.registry.tool(name).map(|t| t.tool.clone())
    }
}

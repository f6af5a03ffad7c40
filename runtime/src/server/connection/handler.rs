//! rmcp's `ServerHandler` for a [`Connection`]: every MCP method rmcp dispatches.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptsCapability, ReadResourceRequestParams,
    ReadResourceResponse, ResourcesCapability, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;

use super::errors::{offered, task_error};
use super::state::{Connection, lock};
use crate::action::TaskSupport;

/// The task methods exist from MCP 2026-07-28 on (rmcp has already refused a client that
/// did not declare the extension in the request).
fn tasks_served<M: rmcp::model::ConstString>(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    match context.protocol_version() {
        Some(version) if version.has_initialize() => Err(ErrorData::method_not_found::<M>()),
        _ => Ok(()),
    }
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
            if let Some(super::SessionTag(id)) = context.extensions.get() {
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
        let modern = context.protocol_version().is_some_and(|version| !version.has_initialize());
        // Boxed: see `call_tool`.
        Box::pin(self.list(principal.as_ref(), modern)).await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        tasks_served::<rmcp::model::GetTaskMethod>(&context)?;
        let principal = self.principal(&context);
        // Boxed: see `call_tool`.
        let task = Box::pin(self.shared.engine.task(&request.task_id, principal.as_ref())).await.map_err(task_error)?;
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
        // Boxed: see `call_tool`.
        Box::pin(engine.update_task(&request.task_id, principal.as_ref(), request.input_responses))
            .await
            .map_err(task_error)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks_served::<rmcp::model::CancelTaskMethod>(&context)?;
        let principal = self.principal(&context);
        // Boxed: see `call_tool`.
        Box::pin(self.shared.engine.cancel_task(&request.task_id, principal.as_ref())).await.map_err(task_error)
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
            .then(|| crate::server::wire::invalid_params(&request.method, request.params.clone().unwrap_or_default()))
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
        let accepted = self.honoured(requested);
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

impl Connection {
    /// Holds an acknowledged stream open, registered with the server, until the client
    /// closes it or the transport ends.
    async fn listening(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let principal = self.principal(context.request_context());
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let resources = uris.into_iter().filter_map(|uri| self.subscription(uri, principal.as_ref())).collect();
        let _listening = self.shared.listeners.listen(context.sink().clone(), resources).await;
        // The stream ends when its client closes it, its transport ends (stdin closed), or
        // the server closes: the client reconnects elsewhere.
        let ended = async {
            match self.state.ended.get() {
                Some(ended) => ended.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = context.cancelled() => {}
            () = ended => {}
            () = self.shared.lifecycle.closing() => {}
        }
        Ok(())
    }
}

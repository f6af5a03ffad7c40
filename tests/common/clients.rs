//! rmcp's client: [`TestClient`] for the tests (it records the notifications it gets and
//! asserts on results), and the bare connections the benchmarks drive.

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam, ProgressToken, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::PATIENCE;
use super::servers::{example_binary, spawn_http_example};

/// How a client talks to a Streamable HTTP server.
#[derive(Clone, Copy, Debug)]
pub enum Lifecycle {
    /// `initialize`, then a session (MCP 2025-11-25, rmcp's default).
    Session,
    /// No session, as MCP 2026-07-28 does: rmcp's client in the discover lifecycle (no
    /// `initialize`; every request carries its protocol version and capabilities).
    Sessionless,
}

/// Connects `handler` as rmcp's client to the Streamable HTTP endpoint `url`
/// (`http://host:port/mcp`).
pub async fn connect_http<H: ClientHandler>(
    handler: H,
    url: &str,
    lifecycle: Lifecycle,
) -> RunningService<RoleClient, H> {
    connect_http_as(handler, url, lifecycle, None).await
}

/// [`connect_http`], presenting `token` (if any) as `Authorization: Bearer` on every request.
pub async fn connect_http_as<H: ClientHandler>(
    handler: H,
    url: &str,
    lifecycle: Lifecycle,
    token: Option<&str>,
) -> RunningService<RoleClient, H> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    match lifecycle {
        Lifecycle::Session => handler.serve(transport).await.expect("initialize over HTTP"),
        Lifecycle::Sessionless => {
            let discover = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
            let service = handler.serve_with_lifecycle(transport, discover).await.expect("server/discover");
            let negotiated = service.peer_info().map(|info| info.protocol_version.clone());
            assert_eq!(negotiated, Some(ProtocolVersion::V_2026_07_28));
            service
        }
    }
}

/// Serves `server` to a bare rmcp client over an in-memory pipe: the call path without a
/// network, for the benchmarks.
pub async fn connect_in_memory<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(tokio::io::split(server_io)).await.expect("server");
        let _ = running.waiting().await;
    });
    ().serve(tokio::io::split(client_io)).await.expect("client")
}

/// One `notifications/progress`: token, progress, message.
pub type ProgressEvent = (ProgressToken, f64, Option<String>);

/// Records every `notifications/tools/list_changed`, `notifications/progress` and
/// `notifications/message` the server sends.
#[derive(Clone)]
pub struct Observer {
    list_changed: mpsc::UnboundedSender<()>,
    /// `(progress token, progress, message)` in arrival order.
    pub progress: Arc<Mutex<Vec<ProgressEvent>>>,
    /// `(level, data)` in arrival order, the level as MCP spells it.
    pub logs: Arc<Mutex<Vec<(String, Value)>>>,
    /// The URIs of `notifications/resources/updated`, in arrival order.
    pub resources_updated: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Observer {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.resources_updated.lock().unwrap().push(params.uri);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push((params.progress_token, params.progress, params.message));
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577; toolgate still serves it
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap().as_str().unwrap_or_default().to_string();
        self.logs.lock().unwrap().push((level, params.data));
    }
}

/// A connected MCP client, with the server process it owns (if any).
pub struct TestClient {
    pub service: RunningService<RoleClient, Observer>,
    /// The Streamable HTTP endpoint, for HTTP clients.
    pub url: Option<String>,
    list_changed: mpsc::UnboundedReceiver<()>,
    _server: Option<Child>,
}

fn observer() -> (Observer, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Observer {
            list_changed: tx,
            progress: Arc::default(),
            logs: Arc::default(),
            resources_updated: Arc::default(),
        },
        rx,
    )
}

impl TestClient {
    /// Spawns the example and talks to it over its stdin/stdout.
    pub async fn stdio_example(name: &str) -> Self {
        Self::stdio_example_with(name, &[]).await
    }

    /// Spawns the example with `args` and talks to it over its stdin/stdout.
    pub async fn stdio_example_with(name: &str, args: &[&str]) -> Self {
        let mut command = Command::new(example_binary(name));
        command.args(super::servers::memory_unless_told(args)).args(args);
        let transport = TokioChildProcess::new(command).expect("spawn example");
        let (observer, list_changed) = observer();
        let service = observer.serve(transport).await.expect("initialize over stdio");
        Self { service, url: None, list_changed, _server: None }
    }

    /// Spawns the example with `--http 127.0.0.1:0` and connects to the address it prints.
    pub async fn http_example(name: &str) -> Self {
        Self::http_example_with(name, &[], None).await
    }

    /// Spawns the example with `--http 127.0.0.1:0` and `args`, and connects to it over a
    /// session, presenting `token` (if any) as `Authorization: Bearer`.
    pub async fn http_example_with(name: &str, args: &[&str], token: Option<&str>) -> Self {
        let (child, url) = spawn_http_example(name, args, &[]).await;
        let mut client = Self::http_as(&url, Lifecycle::Session, token).await;
        client._server = Some(child);
        client
    }

    /// Connects to a Streamable HTTP endpoint without a session, as MCP 2026-07-28 does
    /// ([`Lifecycle::Sessionless`]). No `list_changed` reaches it: no session.
    pub async fn sessionless(url: &str) -> Self {
        let (observer, list_changed) = observer();
        let service = connect_http(observer, url, Lifecycle::Sessionless).await;
        Self { service, url: Some(url.to_string()), list_changed, _server: None }
    }

    /// Connects to a Streamable HTTP endpoint (`http://host:port/mcp`).
    ///
    /// rmcp delivers `list_changed` on the session's standalone GET stream, which its
    /// client opens in the background right after initializing; every test makes at
    /// least one round trip before its first transition, which leaves it time to open.
    pub async fn http(url: &str) -> Self {
        let (observer, list_changed) = observer();
        let service = connect_http(observer, url, Lifecycle::Session).await;
        Self { service, url: Some(url.to_string()), list_changed, _server: None }
    }

    /// Connects to a Streamable HTTP endpoint as [`TestClient::http`] or
    /// [`TestClient::sessionless`] do, presenting `token` as `Authorization: Bearer`.
    pub async fn http_as(url: &str, lifecycle: Lifecycle, token: Option<&str>) -> Self {
        let (observer, list_changed) = observer();
        let service = connect_http_as(observer, url, lifecycle, token).await;
        Self { service, url: Some(url.to_string()), list_changed, _server: None }
    }

    /// The names `tools/list` shows now.
    pub async fn tool_names(&self) -> Vec<String> {
        self.tools().await.into_iter().map(|t| t.name.to_string()).collect()
    }

    /// The tools `tools/list` shows now.
    pub async fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.service.list_all_tools().await.expect("tools/list")
    }

    /// Calls a tool; protocol errors are returned, tool errors are in the result.
    pub async fn try_call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
        let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
        self.service.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments)).await
    }

    /// Calls a tool and returns its `structuredContent` and whether it is an error.
    pub async fn call(&self, tool: &str, arguments: Value) -> (Value, bool) {
        let result = self.try_call(tool, arguments).await.expect("tools/call");
        let content = result.structured_content.clone().expect("every toolgate result has structuredContent");
        (content, result.is_error == Some(true))
    }

    /// Calls a tool that must succeed and returns its `structuredContent`.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let (content, is_error) = self.call(tool, arguments).await;
        assert!(!is_error, "{tool} failed: {content}");
        content
    }

    /// Calls a tool that must fail and returns its `structuredContent`.
    pub async fn refused(&self, tool: &str, arguments: Value) -> Value {
        let (content, is_error) = self.call(tool, arguments).await;
        assert!(is_error, "{tool} should have failed: {content}");
        content
    }

    /// Waits for the next `notifications/tools/list_changed`.
    pub async fn expect_list_changed(&mut self) {
        tokio::time::timeout(PATIENCE, self.list_changed.recv())
            .await
            .expect("no notifications/tools/list_changed arrived")
            .expect("client closed");
    }

    /// How many `list_changed` notifications arrived and were not yet awaited.
    pub fn pending_list_changed(&mut self) -> usize {
        let mut count = 0;
        while self.list_changed.try_recv().is_ok() {
            count += 1;
        }
        count
    }
}

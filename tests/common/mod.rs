//! Real MCP clients (rmcp's) for the integration tests: over stdio to a child process,
//! and over Streamable HTTP to a child process or an in-process server.

#![allow(dead_code)] // each test binary uses a different part

pub mod sessionless;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam, ProgressToken, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// Long enough for a loaded CI machine; only ever a bound on a failure.
pub const PATIENCE: Duration = Duration::from_secs(20);

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
}

impl ClientHandler for Observer {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
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

/// The path of a built example binary. A plain `cargo test` builds the examples first;
/// `cargo test --test NAME` does not, so run `cargo build --examples` before it or the
/// test talks to a stale binary.
pub fn example_binary(name: &str) -> PathBuf {
    let deps = std::env::current_exe().expect("test binary path");
    let target = deps.parent().and_then(|d| d.parent()).expect("target dir");
    let path = target.join("examples").join(name);
    assert!(path.exists(), "{} is not built; run the tests with `cargo test`", path.display());
    path
}

fn observer() -> (Observer, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Observer { list_changed: tx, progress: Arc::default(), logs: Arc::default() }, rx)
}

impl TestClient {
    /// Spawns the example and talks to it over its stdin/stdout.
    pub async fn stdio_example(name: &str) -> Self {
        let transport = TokioChildProcess::new(Command::new(example_binary(name))).expect("spawn example");
        let (observer, list_changed) = observer();
        let service = observer.serve(transport).await.expect("initialize over stdio");
        Self { service, url: None, list_changed, _server: None }
    }

    /// Spawns the example with `--http 127.0.0.1:0` and connects to the address it prints.
    pub async fn http_example(name: &str) -> Self {
        let (child, url) = spawn_http_example(name, &[], &[]).await;
        let mut client = Self::http(&url).await;
        client._server = Some(child);
        client
    }

    /// Connects to a Streamable HTTP endpoint without a session, as MCP 2026-07-28 does:
    /// rmcp's client with the discover lifecycle (no `initialize`, every request carries
    /// its protocol version and capabilities). No `list_changed` reaches it: no session.
    pub async fn sessionless(url: &str) -> Self {
        let transport = StreamableHttpClientTransport::from_uri(url.to_string());
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        let (observer, list_changed) = observer();
        let service = observer.serve_with_lifecycle(transport, lifecycle).await.expect("server/discover");
        let negotiated = service.peer_info().map(|info| info.protocol_version.clone());
        assert_eq!(negotiated, Some(ProtocolVersion::V_2026_07_28));
        Self { service, url: Some(url.to_string()), list_changed, _server: None }
    }

    /// Connects to a Streamable HTTP endpoint (`http://host:port/mcp`).
    ///
    /// rmcp delivers `list_changed` on the session's standalone GET stream, which its
    /// client opens in the background right after initializing; every test makes at
    /// least one round trip before its first transition, which leaves it time to open.
    pub async fn http(url: &str) -> Self {
        let transport = StreamableHttpClientTransport::from_uri(url.to_string());
        let (observer, list_changed) = observer();
        let service = observer.serve(transport).await.expect("initialize over HTTP");
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

/// Spawns the example `name` with `--http 127.0.0.1:0`, then `extra_args`, with the `env`
/// variables set, and waits until it serves. Returns the child (killed when dropped) and its
/// endpoint, `http://127.0.0.1:PORT/mcp`.
pub async fn spawn_http_example(name: &str, extra_args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(example_binary(name))
        .args(["--http", "127.0.0.1:0"])
        .args(extra_args)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn example");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            // `… at http://ADDR/mcp`, perhaps followed by ` (sessionless)`.
            if let Some(url) =
                line.split("serving Streamable HTTP at ").nth(1).and_then(|r| r.split_whitespace().next())
            {
                return url.to_string();
            }
        }
        panic!("the example exited without serving");
    })
    .await
    .expect("the example did not start serving");
    // Keep draining stderr so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// The directory holding `deps/` and `examples/` (e.g. `target/debug`), derived from the
/// test binary's path the way [`example_binary`] does.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(std::path::Path::parent).expect("target dir").to_path_buf()
}

/// Runs `command` to completion within `patience`; a failure (not started, timed out,
/// non-zero exit) is described with the command's output.
pub async fn run_command(
    command: &mut Command,
    patience: Duration,
    what: &str,
) -> Result<std::process::Output, String> {
    command.stdin(Stdio::null()).kill_on_drop(true);
    let output = tokio::time::timeout(patience, command.output())
        .await
        .map_err(|_| format!("{what}: still running after {patience:?}"))?
        .map_err(|error| format!("{what}: could not start: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(output)
}

/// Serves `server` over Streamable HTTP on a free loopback port, in this process.
pub async fn serve_in_process(server: toolgate::Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { server.serve_http(listener).await.expect("serve") });
    url
}

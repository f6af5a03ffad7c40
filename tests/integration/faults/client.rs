//! The load's client: sessionless 2026-07-28 requests over plain HTTP that never panic. A
//! replica killed, paused or restarting is an answer lost, which the history records as
//! such (its outcome unknown), not a failure of the harness.

use std::time::Duration;

use serde_json::{Value, json};

/// How long a request may take before its outcome is recorded as unknown: longer than a
/// pause (the replica answers after it), shorter than the run.
const PATIENCE: Duration = Duration::from_secs(20);

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// What a request got back.
#[derive(Debug)]
pub(super) enum Answer {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error object.
    Error(Value),
    /// No reply: the connection failed, the reply was cut, or it took too long.
    Lost(String),
}

/// One principal's client.
pub(super) struct Caller {
    http: reqwest::Client,
    bearer: String,
}

impl Caller {
    pub(super) fn new(token: &str) -> Self {
        let http = reqwest::Client::builder().build().expect("an HTTP client");
        Self { http, bearer: format!("Bearer {token}") }
    }

    /// `tools/call` of `tool` at `url`; `as_task` declares the Tasks extension, so a tool
    /// that may run as a task does.
    pub(super) async fn call(&self, url: &str, tool: &str, arguments: Value, as_task: bool) -> Answer {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if as_task {
            params["_meta"] = opted_in();
        }
        self.request(url, "tools/call", Some(tool), params, PATIENCE).await
    }

    /// `tasks/get` or `tasks/cancel` of `task` at `url`. A poll waits two seconds at most,
    /// as a client would before asking another replica: a paused one does not hold it.
    pub(super) async fn task(&self, url: &str, method: &str, task: &str) -> Answer {
        let params = json!({ "taskId": task, "_meta": opted_in() });
        self.request(url, method, Some(task), params, Duration::from_secs(2)).await
    }

    async fn request(
        &self,
        url: &str,
        method: &str,
        name: Option<&str>,
        mut params: Value,
        patience: Duration,
    ) -> Answer {
        let meta = params.as_object_mut().unwrap().entry("_meta").or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        if meta.get("io.modelcontextprotocol/clientCapabilities").is_none() {
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut request = (self.http.post(url))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method)
            .header("Authorization", &self.bearer)
            .timeout(patience)
            .json(&body);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Answer::Lost(error.to_string()),
        };
        let status = response.status();
        let sse =
            response.headers().get("content-type").is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        let text = match response.text().await {
            Ok(text) => text,
            Err(error) => return Answer::Lost(error.to_string()),
        };
        let message = if sse {
            // The reply is the stream's event that carries `id` 1.
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message["id"] == 1)
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        match message {
            Some(mut message) if message.get("result").is_some() => Answer::Result(message["result"].take()),
            Some(mut message) if message.get("error").is_some() => Answer::Error(message["error"].take()),
            _ => Answer::Lost(format!("HTTP {status} without a reply: {}", text.chars().take(200).collect::<String>())),
        }
    }
}

/// `_meta` declaring the Tasks extension.
fn opted_in() -> Value {
    json!({ "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } } })
}

//! The load's client: sessionless 2026-07-28 requests over plain HTTP that never panic. A
//! replica killed, paused or restarting is an answer lost, which the history records as
//! such (its outcome unknown), not a failure of the harness. The rolling restart
//! (`tests/integration/roll`) sends the same requests through a load balancer, which names
//! the replica that answered in a header.

use std::time::Duration;

use serde_json::{Value, json};

/// How long a request may take before its outcome is recorded as unknown: longer than a
/// pause (the replica answers after it), shorter than the run.
const PATIENCE: Duration = Duration::from_secs(20);

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The response header in which a load balancer names the replica that answered
/// (`tests/integration/roll` has HAProxy add it).
pub(crate) const SERVED_BY: &str = "x-toolgate-replica";

/// What a request got back.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error object.
    Error(Value),
    /// No reply: the connection failed, the reply was cut, or it took too long.
    Lost(String),
}

/// One principal's client.
pub(crate) struct Caller {
    http: reqwest::Client,
    bearer: String,
}

impl Caller {
    pub(crate) fn new(token: &str) -> Self {
        let http = reqwest::Client::builder().build().expect("an HTTP client");
        Self { http, bearer: format!("Bearer {token}") }
    }

    /// `tools/call` of `tool` at `url`; `as_task` declares the Tasks extension, so a tool
    /// that may run as a task does.
    pub(crate) async fn call(&self, url: &str, tool: &str, arguments: Value, as_task: bool) -> Answer {
        self.call_via(url, tool, arguments, as_task).await.0
    }

    /// [`Caller::call`], with the replica that answered as the [`SERVED_BY`] header names it.
    pub(crate) async fn call_via(
        &self,
        url: &str,
        tool: &str,
        arguments: Value,
        as_task: bool,
    ) -> (Answer, Option<String>) {
        let mut params = json!({ "name": tool, "arguments": arguments });
        if as_task {
            params["_meta"] = opted_in();
        }
        self.request(url, "tools/call", Some(tool), params, PATIENCE).await
    }

    /// `tasks/get` or `tasks/cancel` of `task` at `url`. A poll waits two seconds at most,
    /// as a client would before asking another replica: a paused one does not hold it.
    pub(crate) async fn task(&self, url: &str, method: &str, task: &str) -> Answer {
        let params = json!({ "taskId": task, "_meta": opted_in() });
        self.request(url, method, Some(task), params, Duration::from_secs(2)).await.0
    }

    async fn request(
        &self,
        url: &str,
        method: &str,
        name: Option<&str>,
        mut params: Value,
        patience: Duration,
    ) -> (Answer, Option<String>) {
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
            Err(error) => return (Answer::Lost(chain(&error)), None),
        };
        let served_by = response.headers().get(SERVED_BY).and_then(|v| v.to_str().ok()).map(String::from);
        (Self::read(response).await, served_by)
    }

    /// The JSON-RPC reply in `response`, a JSON body or an event stream.
    async fn read(response: reqwest::Response) -> Answer {
        let status = response.status();
        let sse =
            response.headers().get("content-type").is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        let text = match response.text().await {
            Ok(text) => text,
            Err(error) => return Answer::Lost(chain(&error)),
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

/// An error with its causes, which reqwest's own message leaves out (`error sending
/// request` says nothing of a refused connection).
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

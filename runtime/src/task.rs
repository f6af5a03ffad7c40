//! What the store keeps of an MCP task (2026-07-28 Tasks extension): its record, read by
//! every replica that shares the store, and whether a task still holds the instance its
//! call changes. The engine runs tasks (`engine/tasks.rs`); the gate refuses calls on an
//! instance a running task holds (`TASK_RUNNING`).

use std::collections::BTreeMap;

use rmcp::model::{DetailedTask, InputRequests, JsonObject, Task, TaskPayload, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::store::{FlowStore, Snapshot, StoreKey, now_ms, rfc3339};

/// How often a client should ask (`pollIntervalMs`).
pub(crate) const POLL_INTERVAL_MS: u64 = 500;

/// How often the process running a task says so in its record, and picks up what other
/// replicas left there (a cancellation, answers).
pub(crate) const HEARTBEAT_MS: u64 = 1_000;

/// A running task whose record has not heard from its process for this long is one whose
/// process ended: it is reported `failed`.
pub(crate) const LAPSE_MS: u64 = 5_000;

/// A task as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    /// The principal that created it ([`Principal::owner_id`](crate::auth::Principal::owner_id),
    /// its digest), or `None` for a caller that did not authenticate: only the same caller
    /// may read or cancel it.
    pub(crate) owner: Option<String>,
    pub(crate) tool: String,
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status_message: Option<String>,
    pub(crate) created_at_ms: u64,
    pub(crate) updated_at_ms: u64,
    /// How long the task and its result are kept, from its creation (`ttlMs`).
    pub(crate) ttl_ms: u64,
    /// The instance the task's call holds (its store key and id), while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) holds: Option<(String, String)>,
    /// The tool's result, once completed (a refusal or a handler's error included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<JsonObject>,
    /// The JSON-RPC error, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<JsonObject>,
    /// The questions outstanding, while `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_requests: Option<InputRequests>,
    /// When the process running it last said so (milliseconds since the Unix epoch).
    #[serde(default)]
    pub(crate) heartbeat_at_ms: u64,
    /// `tasks/cancel` reached a replica that does not run it: the one that does stops it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) cancel_requested: bool,
    /// Answers `tasks/update` left for the process running it, from another replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) answers: BTreeMap<String, Value>,
}

impl TaskRecord {
    /// A task just created by `owner`, running `tool`, kept `ttl_ms`.
    pub(crate) fn new(owner: Option<String>, tool: &str, ttl_ms: u64) -> Self {
        let now = now_ms();
        Self {
            owner,
            tool: tool.to_string(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms,
            holds: None,
            result: None,
            error: None,
            input_requests: None,
            heartbeat_at_ms: now,
            cancel_requested: false,
            answers: BTreeMap::new(),
        }
    }

    /// The record a snapshot holds, if it holds one.
    pub(crate) fn read(snapshot: &Snapshot) -> Option<Self> {
        snapshot.record.clone().and_then(|record| serde_json::from_value(record).ok())
    }

    /// Whether it has not ended.
    pub(crate) fn is_running(&self) -> bool {
        self.status == TaskStatus::Working || self.status == TaskStatus::InputRequired
    }

    /// Whether its process stopped saying it runs it.
    pub(crate) fn lapsed(&self, now: u64) -> bool {
        self.is_running() && now.saturating_sub(self.heartbeat_at_ms) > LAPSE_MS
    }

    /// The task as `CreateTaskResult` and `tasks/get` show it.
    pub(crate) fn task(&self, id: &str) -> Task {
        let mut task = Task::new(id.to_string(), self.status, rfc3339(self.created_at_ms), rfc3339(self.updated_at_ms))
            .with_ttl_ms(self.ttl_ms)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        if let Some(message) = &self.status_message {
            task = task.with_status_message(message.clone());
        }
        task
    }

    /// The task with what its status carries: the result, the error or the questions.
    pub(crate) fn detailed(&self, id: &str) -> DetailedTask {
        let payload = match self.status {
            TaskStatus::Completed => TaskPayload::Completed { result: self.result.clone().unwrap_or_default() },
            TaskStatus::Failed => TaskPayload::Failed { error: self.error.clone().unwrap_or_default() },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            TaskStatus::InputRequired => {
                TaskPayload::InputRequired { input_requests: self.input_requests.clone().unwrap_or_default() }
            }
            _ => TaskPayload::Working,
        };
        DetailedTask::new(self.task(id), payload)
    }

    /// The snapshot that stores it after `previous`: it expires with the task's `ttlMs`.
    pub(crate) fn snapshot(&self, previous: &Snapshot) -> Snapshot {
        Snapshot {
            record: serde_json::to_value(self).ok(),
            expires_at_ms: Some(self.created_at_ms.saturating_add(self.ttl_ms)),
            ..previous.next()
        }
    }
}

/// The running task holding the instance committed as `snapshot`: its id and record. A
/// task that ended, or whose process stopped (its record lapsed), holds nothing; nor does
/// one whose record cannot be read (an instance is never locked forever by it).
pub(crate) async fn holder(store: &dyn FlowStore, snapshot: &Snapshot) -> Option<(String, TaskRecord)> {
    let task_id = snapshot.task.as_ref()?;
    let record = store.load(&StoreKey::task(task_id)).await.ok()?;
    let task = TaskRecord::read(&record).filter(|task| task.is_running() && !task.lapsed(now_ms()))?;
    Some((task_id.clone(), task))
}

/// Refuses a call that would change `instance` (`id`, as committed in `snapshot`) while
/// a running task holds it: `TASK_RUNNING`, naming the task.
pub(crate) async fn refuse_if_held(store: &dyn FlowStore, snapshot: &Snapshot, id: &str) -> Result<(), ToolError> {
    if snapshot.task.is_none() {
        return Ok(());
    }
    match holder(store, snapshot).await {
        Some((task_id, task)) => Err(ToolError::task_running(&task_id, &task.tool, id, POLL_INTERVAL_MS * 2)),
        None => Ok(()),
    }
}

/// A status as metrics, logs and the console name it.
pub(crate) fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        _ => "other",
    }
}

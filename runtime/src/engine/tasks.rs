//! Calls that outlive their request: the MCP Tasks extension (2026-07-28,
//! `io.modelcontextprotocol/tasks`). A task is committed to the store before its
//! `CreateTaskResult` is sent, so `tasks/get` answers on any replica sharing the store and
//! after a restart of a file store; it belongs to its caller (anyone else is told the id
//! is unknown, as for an id that never existed); its call runs through the same
//! pipeline as any other, and a cancelled one commits nothing (the call's own
//! cancellation: `engine::run_handler`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolResult, ClientCapabilities, DetailedTask, InputRequests, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{CallSource, Engine};
use crate::action::CallClient;
use crate::auth::Principal;
use crate::flow::Origin;
use crate::gate::Caller;
use crate::input::{Inputs, TaskQuestions};
use crate::store::{Snapshot, StoreError, StoreKey, now_ms, rfc3339};

/// How long a task is kept, from its creation (`ttlMs`): 15 minutes.
pub(crate) const TASK_TTL_MS: u64 = 15 * 60 * 1_000;

/// How often a client should ask (`pollIntervalMs`).
pub(crate) const TASK_POLL_INTERVAL_MS: u64 = 500;

/// How often the process running a task says so in its record, and picks up what other
/// replicas left there (a cancellation, answers).
const HEARTBEAT_MS: u64 = 1_000;

/// A running task whose record has not heard from its process for this long is one whose
/// process ended: it is reported `failed`.
const LAPSE_MS: u64 = 5_000;

/// A task as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TaskRecord {
    /// The principal that created it (its key), or `None` for a caller that did not
    /// authenticate: only the same caller may read or cancel it.
    owner: Option<String>,
    tool: String,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    created_at_ms: u64,
    updated_at_ms: u64,
    /// The tool's result, once completed (a refusal or a handler's error included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    /// The JSON-RPC error, once failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<JsonObject>,
    /// The questions outstanding, while `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_requests: Option<InputRequests>,
    /// When the process running it last said so (milliseconds since the Unix epoch).
    #[serde(default)]
    heartbeat_at_ms: u64,
    /// `tasks/cancel` reached a replica that does not run it: the one that does stops it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    cancel_requested: bool,
    /// Answers `tasks/update` left for the process running it, from another replica.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    answers: std::collections::BTreeMap<String, Value>,
}

impl TaskRecord {
    fn is_running(&self) -> bool {
        self.status == TaskStatus::Working || self.status == TaskStatus::InputRequired
    }

    /// Whether its process stopped saying it runs it.
    fn lapsed(&self, now: u64) -> bool {
        self.is_running() && now.saturating_sub(self.heartbeat_at_ms) > LAPSE_MS
    }
}

impl TaskRecord {
    fn task(&self, id: &str) -> Task {
        let mut task = Task::new(id.to_string(), self.status, rfc3339(self.created_at_ms), rfc3339(self.updated_at_ms))
            .with_ttl_ms(TASK_TTL_MS)
            .with_poll_interval_ms(TASK_POLL_INTERVAL_MS);
        if let Some(message) = &self.status_message {
            task = task.with_status_message(message.clone());
        }
        task
    }

    fn detailed(&self, id: &str) -> DetailedTask {
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

    fn snapshot(&self, previous: &Snapshot) -> Snapshot {
        Snapshot {
            record: serde_json::to_value(self).ok(),
            expires_at_ms: Some(self.created_at_ms.saturating_add(TASK_TTL_MS)),
            ..previous.next()
        }
    }
}

/// Why a task request is refused.
#[derive(Debug)]
pub(crate) enum TaskError {
    /// No such task for this caller (never created, expired, or another's).
    Unknown,
    /// The store failed.
    Store(StoreError),
}

/// A task running in this process: how to cancel it, and how its questions are answered.
#[derive(Debug, Clone)]
struct Running {
    cancel: CancellationToken,
    questions: Arc<TaskQuestions>,
}

/// The tasks running in this process, by id.
#[derive(Debug, Default)]
pub(crate) struct RunningTasks(Mutex<HashMap<String, Running>>);

impl RunningTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a task's call needs once its request has ended.
pub(crate) struct TaskCall {
    pub(crate) origin: Origin,
    pub(crate) caller: Caller,
    pub(crate) trace: Option<crate::telemetry::TraceParent>,
    pub(crate) server: std::sync::Weak<dyn std::any::Any + Send + Sync>,
    pub(crate) client: CallClient,
    /// What the client declared it can answer, in the request that created the task.
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) arguments: Map<String, Value>,
    /// Told the instance a transition moved, once committed.
    pub(crate) moved: Box<dyn FnOnce(StoreKey) + Send>,
}

fn owner_of(principal: Option<&Principal>) -> Option<String> {
    principal.map(Principal::key)
}

impl Engine {
    /// Creates a task running `tool` for `call`: stored first (the `Task` returned is
    /// what `tasks/get` answers from now on, on any replica), then run.
    pub(crate) async fn start_task(self: &Arc<Self>, tool: &'static str, call: TaskCall) -> Result<Task, TaskError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let key = StoreKey::task(&id);
        let now = now_ms();
        let record = TaskRecord {
            owner: owner_of(call.caller.principal.as_ref()),
            tool: tool.to_string(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            result: None,
            error: None,
            input_requests: None,
            heartbeat_at_ms: now,
            cancel_requested: false,
            answers: Default::default(),
        };
        let created = record.snapshot(&Snapshot::default());
        self.store.compare_and_set(&key, 0, &created).await.map_err(TaskError::Store)?;
        let task = record.task(&id);
        let running = Running { cancel: CancellationToken::new(), questions: Arc::default() };
        self.running.lock().insert(id.clone(), running.clone());
        let engine = self.clone();
        tokio::spawn(async move {
            // The questions the call asks become the task's `inputRequests`; the record
            // hears that the task still runs, and brings what other replicas left.
            let watching = tokio::spawn(engine.clone().watch_questions(id.clone(), running.questions.outstanding()));
            let beating = tokio::spawn(engine.clone().heartbeat(id.clone(), running.clone()));
            let outcome = engine.run_task(tool, call, &running).await;
            watching.abort();
            beating.abort();
            // Still listed as running while its end is written: a cancel meanwhile reaches
            // a call that already ended, and changes nothing.
            engine.finish_task(&id, outcome).await;
            engine.running.lock().remove(&id);
        });
        Ok(task)
    }

    /// Writes the task's outstanding questions as they change: `input_required` with them,
    /// `working` again once all are answered.
    async fn watch_questions(
        self: Arc<Self>,
        id: String,
        mut outstanding: tokio::sync::watch::Receiver<InputRequests>,
    ) {
        while outstanding.changed().await.is_ok() {
            let requests = outstanding.borrow_and_update().clone();
            self.update_record(&id, |record| {
                if record.status != TaskStatus::Working && record.status != TaskStatus::InputRequired {
                    return false;
                }
                record.status = if requests.is_empty() { TaskStatus::Working } else { TaskStatus::InputRequired };
                record.input_requests = Some(requests.clone()).filter(|r| !r.is_empty());
                true
            })
            .await;
        }
    }

    /// Says, every [`HEARTBEAT_MS`], that this process still runs the task, and picks up a
    /// cancellation or answers another replica left in its record.
    async fn heartbeat(self: Arc<Self>, id: String, running: Running) {
        let mut every = tokio::time::interval(std::time::Duration::from_millis(HEARTBEAT_MS));
        every.tick().await;
        loop {
            every.tick().await;
            self.update_record(&id, |record| {
                if !record.is_running() {
                    return false;
                }
                record.heartbeat_at_ms = now_ms();
                if record.cancel_requested {
                    running.cancel.cancel();
                }
                // Delivered twice (a retried compare-and-set) is harmless: a key answered is
                // no longer waited for.
                running.questions.answer(std::mem::take(&mut record.answers));
                true
            })
            .await;
        }
    }

    /// Changes the task's record with `change` (which says whether it changed anything),
    /// by compare-and-set.
    async fn update_record(&self, id: &str, change: impl Fn(&mut TaskRecord) -> bool) {
        let key = StoreKey::task(id);
        for _ in 0..8 {
            let Ok(before) = self.store.load(&key).await else { return };
            let Some(mut record) = before.record.clone().and_then(|r| serde_json::from_value::<TaskRecord>(r).ok())
            else {
                return;
            };
            if !change(&mut record) {
                return;
            }
            record.updated_at_ms = now_ms();
            match self.store.compare_and_set(&key, before.version, &record.snapshot(&before)).await {
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => tracing::warn!(task = id, %error, "cannot record a task's change"),
                Ok(_) => {}
            }
            return;
        }
    }

    /// Runs the task's call through the pipeline; its result, or `None` when cancelled.
    async fn run_task(&self, tool: &'static str, call: TaskCall, running: &Running) -> Option<CallToolResult> {
        let entry = self.registry.tool(tool)?;
        let inputs = Arc::new(Inputs::for_task(call.capabilities, running.questions.clone()));
        let client = call.client.for_task(running.cancel.clone(), inputs);
        let source = CallSource {
            origin: &call.origin,
            caller: &call.caller,
            session: None,
            trace: call.trace,
            server: call.server,
        };
        let reply = Box::pin(self.call(entry, source, client, call.arguments)).await;
        // Cancelled before it committed: nothing was done. (A call that committed before
        // it heard of the cancellation completed.)
        if reply.is_error && reply.content.get("code").and_then(Value::as_str) == Some("CANCELLED") {
            return None;
        }
        if let Some(moved) = reply.moved.clone() {
            (call.moved)(moved);
        }
        Some(reply.into_result())
    }

    /// Writes the task's end, unless it was cancelled meanwhile.
    async fn finish_task(&self, id: &str, outcome: Option<CallToolResult>) {
        let result = outcome.as_ref().and_then(|r| serde_json::to_value(r).ok()).and_then(|v| v.as_object().cloned());
        self.update_record(id, |record| {
            if record.status != TaskStatus::Working && record.status != TaskStatus::InputRequired {
                return false;
            }
            record.input_requests = None;
            match &result {
                Some(result) => {
                    record.status = TaskStatus::Completed;
                    record.result = Some(result.clone());
                }
                None => record.status = TaskStatus::Cancelled,
            }
            true
        })
        .await;
    }

    /// The task `id`, as `principal` may see it. A task whose process stopped saying it
    /// runs it (that process ended) is recorded `failed` first.
    pub(crate) async fn task(&self, id: &str, principal: Option<&Principal>) -> Result<DetailedTask, TaskError> {
        let (_, record) = self.task_record(id, principal).await?;
        if record.lapsed(now_ms()) && !self.running.lock().contains_key(id) {
            self.update_record(id, |record| {
                if !record.lapsed(now_ms()) {
                    return false;
                }
                record.status = TaskStatus::Failed;
                record.input_requests = None;
                record.status_message = Some("the server running the task stopped before it finished".into());
                let message = "the server running the task stopped before it finished; read the object it acted on before calling again";
                record.error = serde_json::json!({ "code": -32603, "message": message }).as_object().cloned();
                true
            })
            .await;
            let (_, record) = self.task_record(id, principal).await?;
            return Ok(record.detailed(id));
        }
        Ok(record.detailed(id))
    }

    async fn task_record(&self, id: &str, principal: Option<&Principal>) -> Result<(Snapshot, TaskRecord), TaskError> {
        let snapshot = self.store.load(&StoreKey::task(id)).await.map_err(TaskError::Store)?;
        let record = snapshot.record.clone().and_then(|r| serde_json::from_value::<TaskRecord>(r).ok());
        match record {
            Some(record) if record.owner == owner_of(principal) => Ok((snapshot, record)),
            _ => Err(TaskError::Unknown),
        }
    }

    /// `tasks/cancel`: a task running here is told to stop, and records `cancelled` once
    /// its call stopped without committing (or `completed`, if it committed first); one
    /// another replica runs is asked to stop through its record; one whose process ended
    /// is recorded `cancelled`; a finished one stays as it is.
    pub(crate) async fn cancel_task(&self, id: &str, principal: Option<&Principal>) -> Result<(), TaskError> {
        for _ in 0..8 {
            let (before, mut record) = self.task_record(id, principal).await?;
            if record.status != TaskStatus::Working && record.status != TaskStatus::InputRequired {
                return Ok(());
            }
            if let Some(running) = self.running.lock().get(id) {
                running.cancel.cancel();
                return Ok(());
            }
            if !record.lapsed(now_ms()) {
                // Another replica runs it: it stops it at its next heartbeat.
                record.cancel_requested = true;
                match self.store.compare_and_set(&StoreKey::task(id), before.version, &record.snapshot(&before)).await {
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(error) => return Err(TaskError::Store(error)),
                    Ok(_) => return Ok(()),
                }
            }
            // Nobody runs it any more: nothing can commit; it is cancelled.
            record.status = TaskStatus::Cancelled;
            record.input_requests = None;
            record.status_message = Some("cancelled by the client".into());
            record.updated_at_ms = now_ms();
            match self.store.compare_and_set(&StoreKey::task(id), before.version, &record.snapshot(&before)).await {
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => return Err(TaskError::Store(error)),
                Ok(_) => return Ok(()),
            }
        }
        Ok(())
    }
}

impl Engine {
    /// `tasks/update`: the answers reach the questions the task waits for (here, or through
    /// its record on the replica running it); keys it does not wait for are ignored.
    pub(crate) async fn update_task(
        &self,
        id: &str,
        principal: Option<&Principal>,
        responses: std::collections::BTreeMap<String, Value>,
    ) -> Result<(), TaskError> {
        let (_, record) = self.task_record(id, principal).await?;
        let running = self.running.lock().get(id).cloned();
        match running {
            Some(running) => running.questions.answer(responses),
            // Another replica runs it: the answers wait in its record for its heartbeat.
            None if record.is_running() => {
                self.update_record(id, |record| {
                    if !record.is_running() {
                        return false;
                    }
                    record.answers.extend(responses.clone());
                    true
                })
                .await;
            }
            None => {}
        }
        Ok(())
    }
}

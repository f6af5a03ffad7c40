//! Calls that outlive their request: the MCP Tasks extension (2026-07-28,
//! `io.modelcontextprotocol/tasks`).
//!
//! A call that runs as a task is judged like any other, in its request: a refused call
//! gets its refusal there and never becomes a task. An admitted one is stored (its
//! record, `task.rs`) before its `CreateTaskResult` is sent, so `tasks/get` answers on any
//! replica sharing the store and after a restart of a file store. It belongs to its
//! caller (anyone else is told the id is unknown, as for an id that never existed). It
//! holds the instance it changes for its whole run — the instance's lease (renewed and
//! fenced on Redis) and a mark on the instance that refuses other changing calls with
//! `TASK_RUNNING` — and commits once at its end, or nothing: a failed or cancelled call
//! commits nothing. A task whose process stopped is reported `failed`, or `completed` if
//! its commit was made (the instance's history names the task).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{CallToolResult, ClientCapabilities, DetailedTask, Task, TaskStatus};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::reply::Reply;
use super::running_tasks::Running;
use super::{CallSource, Engine};
use crate::action::{CallClient, FirstWait};
use crate::auth::Principal;
use crate::error::ToolError;
use crate::flow::Origin;
use crate::gate::{Admitted, Requester};
use crate::input::{Inputs, TaskQuestions};
use crate::store::{Hold, Snapshot, Step, StoreError, StoreKey, now_ms};
use crate::task::{HEARTBEAT_MS, TaskRecord, status_name};

/// Why a task request is refused.
#[derive(Debug)]
pub(crate) enum TaskError {
    /// No such task for this caller (never created, expired, or another's).
    Unknown,
    /// The store failed.
    Store(StoreError),
    /// The task's run stopped before it was created or refused.
    Lost,
}

/// What a task's call needs once its request has ended.
pub(crate) struct TaskCall {
    pub(crate) origin: Origin,
    pub(crate) caller: Requester,
    pub(crate) trace: Option<crate::telemetry::TraceParent>,
    pub(crate) client: CallClient,
    /// What the client declared it can answer, in the request that created the task.
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) arguments: Map<String, Value>,
    /// Told the instance a transition moved, once committed.
    pub(crate) moved: Box<dyn FnOnce(StoreKey) + Send>,
}

/// How a call that may run as a task started.
pub(crate) enum Started {
    /// It runs as this task.
    Task(Task),
    /// It never became one: its reply (a refusal, questions asked before the task, an
    /// idempotent call's first result, or a call that finished before it first waited).
    Reply(Reply),
}

/// A task about to start: created once its call is admitted (`Engine::begin_task`),
/// announced when its handler first waits.
pub(crate) struct TaskStart {
    id: String,
    record: TaskRecord,
    announcer: Arc<Announcer>,
    /// Who started it, for the console's list of tasks ([`crate::telemetry::TaskLog`]).
    principal: Option<Principal>,
}

/// Tells the request waiting for it that its call runs as a task: once the task is
/// stored, when its handler first waits. Until then the call is its request's (a question
/// asked [`before_task`](crate::Ask::before_task) is the request's).
struct Announcer {
    /// Where to tell it, and the task to tell, once stored.
    state: Mutex<(Option<oneshot::Sender<Task>>, Option<Task>)>,
    /// Whether it was told (what the call's inputs read).
    started: Arc<AtomicBool>,
}

impl Announcer {
    fn state(&self) -> std::sync::MutexGuard<'_, (Option<oneshot::Sender<Task>>, Option<Task>)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task is stored.
    fn created(&self, task: Task) {
        self.state().1 = Some(task);
    }

    /// Whether the task was stored (its call was admitted).
    fn was_created(&self) -> bool {
        self.state().1.is_some() || self.announced()
    }

    /// The handler waits: the call is a task from now on.
    fn announce(&self) {
        let mut state = self.state();
        if let (Some(to), Some(task)) = (state.0.take(), state.1.take()) {
            self.started.store(true, Ordering::Release);
            crate::telemetry::record_task("working", None);
            let _ = to.send(task);
        }
    }

    fn announced(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }
}

/// Who owns a task, as its record keeps it ([`Principal::owner_id`], as an owned
/// instance's owner); `None` for a caller that did not authenticate.
fn owner_of(principal: Option<&Principal>) -> Option<String> {
    principal.map(Principal::owner_id)
}

impl Engine {
    /// Starts `tool`'s call as a task: judged first, so a refused call answers with its
    /// refusal; admitted, the task is stored (and holds its instance) before it is
    /// returned, then runs on. Past the running-task bounds, the call is refused with
    /// `RATE_LIMITED`.
    pub(crate) async fn start_task(self: &Arc<Self>, tool: &'static str, call: TaskCall) -> Result<Started, TaskError> {
        let Some(entry) = self.registry.tool(tool) else { return Err(TaskError::Unknown) };
        let owner = owner_of(call.caller.principal.as_ref());
        let id = uuid::Uuid::new_v4().simple().to_string();
        let running = Running { owner: owner.clone(), cancel: CancellationToken::new(), questions: Arc::default() };
        if let Err(refusal) = self.admit_task(&id, &running) {
            let mut content = refusal.to_structured();
            crate::domain::field::echo(&mut content, entry.domain);
            return Ok(Started::Reply(Reply::refusal(content)));
        }
        let (announce, announced) = oneshot::channel();
        let announcer = Arc::new(Announcer {
            state: Mutex::new((Some(announce), None)),
            started: Arc::new(AtomicBool::new(false)),
        });
        let ttl_ms = self.limits.tasks.ttl.as_millis() as u64;
        let record = TaskRecord::new(owner, tool, ttl_ms);
        let principal = call.caller.principal.clone();
        let start = TaskStart { id: id.clone(), record, announcer, principal };
        let (replied, reply) = oneshot::channel();
        let engine = self.clone();
        let span = tracing::info_span!("task", task_id = %id, tool);
        self.in_flight.tasks.spawn(
            async move {
                let ran = engine.run_task(tool, call, &running, start, replied).await;
                engine.running.lock().remove(&id);
                if let Some((reply, started)) = ran {
                    engine.finish_task(&id, reply, started).await;
                }
            }
            .instrument(span),
        );
        tokio::select! {
            Ok(task) = announced => Ok(Started::Task(task)),
            Ok(reply) = reply => Ok(Started::Reply(reply)),
            // Its run stopped before either (a panic outside the handler's guard).
            else => Err(TaskError::Lost),
        }
    }

    /// Counts `running` among this process's tasks, within the bounds.
    fn admit_task(&self, id: &str, running: &Running) -> Result<(), ToolError> {
        let limits = self.limits.tasks;
        let mut tasks = self.running.lock();
        if tasks.len() >= limits.per_server {
            return Err(ToolError::rate_limited(format!("{} running tasks per server", limits.per_server), 1_000));
        }
        let mine = tasks.values().filter(|task| task.owner == running.owner).count();
        if mine >= limits.per_principal {
            let limit = format!("{} running tasks per principal", limits.per_principal);
            return Err(ToolError::rate_limited(limit, 1_000));
        }
        tasks.insert(id.to_string(), running.clone());
        Ok(())
    }

    /// Runs the task's call through the pipeline; once admitted, `begin_task` stores the
    /// task, and it is announced when the handler first waits. Returns its reply and when
    /// it started, or `None` when it never became a task (its reply went to `replied`).
    async fn run_task(
        &self,
        tool: &'static str,
        call: TaskCall,
        running: &Running,
        mut start: TaskStart,
        replied: oneshot::Sender<Reply>,
    ) -> Option<(Reply, Instant)> {
        let started = Instant::now();
        let id = start.id.clone();
        let entry = self.registry.tool(tool)?;
        // The questions the call asks become the task's `inputRequests`; the record hears
        // that the task still runs, and brings what other replicas left.
        let this = self.this.upgrade()?;
        let watching =
            tokio::spawn(this.clone().watch_questions(id.clone(), running.questions.clone()).in_current_span());
        let beating = tokio::spawn(this.heartbeat(id.clone(), running.clone()).in_current_span());
        let announcer = start.announcer.clone();
        let inputs = Inputs::for_task(
            call.capabilities,
            running.questions.clone(),
            call.client.inputs_shared(),
            announcer.started.clone(),
        );
        let first_wait = {
            let announcer = announcer.clone();
            FirstWait(Arc::new(move || announcer.announce()))
        };
        let client = call.client.for_task(running.cancel.clone(), Arc::new(inputs), first_wait);
        let source = CallSource { origin: &call.origin, caller: &call.caller, session: None, trace: call.trace };
        let reply = Box::pin(self.call_as(entry, source, client, call.arguments, Some(&mut start))).await;
        watching.abort();
        beating.abort();
        if !announcer.announced() {
            // It never became a task: refused, asked before it, or done before it waited.
            // A task stored for it goes; the request answers.
            if announcer.was_created() {
                let _ = self.store.remove(&StoreKey::task(&id)).await;
            }
            let _ = replied.send(reply);
            return None;
        }
        if let Some(moved) = reply.moved.clone() {
            (call.moved)(moved);
        }
        Some((reply, started))
    }

    /// Step 11 of a task's call: stores the task and marks its instance held; the task is
    /// announced when the handler first waits. Refused (the store failed), the call never
    /// becomes a task.
    pub(super) async fn begin_task(&self, start: &mut TaskStart, admitted: &mut Admitted<'_>) -> Result<(), ToolError> {
        admitted.hold_for_task(&start.id).await?;
        start.record.holds = admitted.held_instance();
        let created = start.record.snapshot(&Snapshot::default());
        let stored = self.store.commit(&StoreKey::task(&start.id), 0, &created, None, None).await;
        stored.map_err(|error| ToolError::store_unavailable(error, 1_000))?;
        tracing::info!(held = start.record.holds.as_ref().map(|(_, id)| id.as_str()), "task stored");
        self.task_log.record(&start.id, start.principal.as_ref());
        start.announcer.created(start.record.task(&start.id));
        Ok(())
    }

    /// Writes the task's outstanding questions as they change: `input_required` with them,
    /// `working` again once all are answered.
    async fn watch_questions(self: Arc<Self>, id: String, questions: Arc<TaskQuestions>) {
        let mut outstanding = questions.outstanding();
        while outstanding.changed().await.is_ok() {
            outstanding.mark_unchanged();
            self.record_questions(&id, &questions).await;
        }
    }

    /// Writes the questions outstanding *now* into the task's record (read at each
    /// compare-and-set, so a slower writer never puts back a key already answered).
    async fn record_questions(&self, id: &str, questions: &TaskQuestions) {
        let mut logged = None;
        self.update_record(id, |record| {
            if record.status != TaskStatus::Working && record.status != TaskStatus::InputRequired {
                return false;
            }
            let requests = questions.current();
            record.status = if requests.is_empty() { TaskStatus::Working } else { TaskStatus::InputRequired };
            logged = Some(requests.keys().cloned().collect::<Vec<_>>());
            record.input_requests = Some(requests).filter(|r| !r.is_empty());
            true
        })
        .await;
        match logged {
            Some(keys) if keys.is_empty() => tracing::info!("task input answered"),
            Some(keys) => tracing::info!(?keys, "task waits for input"),
            None => {}
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
    async fn update_record(&self, id: &str, mut change: impl FnMut(&mut TaskRecord) -> bool) {
        let key = StoreKey::task(id);
        for _ in 0..8 {
            let Ok(before) = self.store.load(&key).await else { return };
            let Some(mut record) = TaskRecord::read(&before) else { return };
            if !change(&mut record) {
                return;
            }
            record.updated_at_ms = now_ms();
            match self.store.commit(&key, before.version, &record.snapshot(&before), None, None).await {
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => tracing::warn!(task = id, %error, "cannot record a task's change"),
                Ok(_) => {}
            }
            return;
        }
    }

    /// Writes the task's end, unless it ended otherwise meanwhile: `cancelled` for a call
    /// cancelled before it committed, `failed` (-32603) for a server bug (a panic, an
    /// internal error), else `completed` with the tool's result — its error included.
    async fn finish_task(&self, id: &str, reply: Reply, started: Instant) {
        let code = reply.is_error.then(|| reply.content.get("code").and_then(Value::as_str).map(str::to_string));
        let (status, result, error) = match code.flatten().as_deref() {
            // Given up as the server stopped: another replica may run the call again.
            Some("CANCELLED") if self.in_flight.gave_up() => {
                let message = "the server stopped before the task finished; nothing was committed, read the object it acted on before calling again";
                (TaskStatus::Failed, None, json!({ "code": -32603, "message": message }).as_object().cloned())
            }
            Some("CANCELLED") => (TaskStatus::Cancelled, None, None),
            Some("INTERNAL") => {
                let correlation = reply.content.get("correlation_id").cloned().unwrap_or(Value::Null);
                let error = json!({
                    "code": -32603,
                    "message": "the server failed while running the task; nothing was committed",
                    "data": { "correlation_id": correlation },
                });
                (TaskStatus::Failed, None, error.as_object().cloned())
            }
            _ => {
                let result = serde_json::to_value(reply.into_result()).ok().and_then(|v| v.as_object().cloned());
                (TaskStatus::Completed, result, None)
            }
        };
        let mut ended = None;
        self.update_record(id, |record| {
            if !record.is_running() {
                return false;
            }
            record.input_requests = None;
            record.holds = None;
            record.status = status;
            record.result.clone_from(&result);
            record.error.clone_from(&error);
            if status == TaskStatus::Cancelled {
                record.status_message = Some("cancelled; nothing was committed".into());
            } else if status == TaskStatus::Failed && self.in_flight.gave_up() {
                record.status_message =
                    Some("the server stopped before the task finished; nothing was committed".into());
            }
            ended = Some(status);
            true
        })
        .await;
        let status = ended.map_or("gone", status_name);
        crate::telemetry::record_task(status, Some(started.elapsed()));
        tracing::info!(status, took_ms = started.elapsed().as_millis() as u64, "task ended");
    }

    /// The task `id`, as `principal` may see it. A task whose process stopped saying it
    /// runs it (that process ended) is recorded as it ended first (`lapsed`).
    pub(crate) async fn task(&self, id: &str, principal: Option<&Principal>) -> Result<DetailedTask, TaskError> {
        let (_, record) = self.task_record(id, principal).await?;
        if record.lapsed(now_ms()) && !self.running.lock().contains_key(id) {
            let committed = self.fence_runner(id, &record).await?;
            self.update_record(id, |record| {
                if !record.lapsed(now_ms()) {
                    return false;
                }
                record.input_requests = None;
                record.holds = None;
                match &committed {
                    Some(state) => {
                        record.status = TaskStatus::Completed;
                        record.status_message =
                            Some("the server running the task stopped after it committed; its result was lost".into());
                        let text = format!("done: the instance is now `{state}` (the full result was lost)");
                        let result = CallToolResult::structured(json!({ "state": state, "message": text }));
                        record.result = serde_json::to_value(result).ok().and_then(|v| v.as_object().cloned());
                    }
                    None => {
                        record.status = TaskStatus::Failed;
                        record.status_message =
                            Some("the server running the task stopped before it finished; nothing was committed".into());
                        let message = "the server running the task stopped before it finished; nothing was committed, read the object it acted on before calling again";
                        record.error = json!({ "code": -32603, "message": message }).as_object().cloned();
                    }
                }
                true
            })
            .await;
            let (_, record) = self.task_record(id, principal).await?;
            crate::telemetry::record_task(status_name(record.status), None);
            return Ok(record.detailed(id));
        }
        Ok(record.detailed(id))
    }

    /// Before this replica speaks for the lapsed task `id` — its runner stopped saying it
    /// runs it: ended, or only paused — it fences the runner: it takes the held instance's
    /// lease over (a runner that resumes finds its commit refused) and clears the task's
    /// mark on the instance by compare-and-set under that lease. Only then is the task
    /// reported. Returns the state the task's commit moved the instance to, if it committed
    /// first (the instance's history names the task), else `None`: nothing was committed,
    /// and now nothing can be. (A task that held no instance committed nothing.)
    async fn fence_runner(&self, id: &str, record: &TaskRecord) -> Result<Option<String>, TaskError> {
        let Some((key, _)) = record.holds.as_ref() else { return Ok(None) };
        let key = StoreKey::from_stored(key.clone());
        let busy = || TaskError::Store(StoreError::Unavailable("the instance the task held stayed leased".into()));
        let step = crate::wait::within(self.limits.lease_wait, self.store.begin(&key, Hold::TakeOver))
            .await
            .ok_or_else(busy)?;
        let (lease, instance) = step.and_then(Step::leased).map_err(TaskError::Store)?;
        if instance.task.as_deref() == Some(id) {
            let freed = Snapshot { task: None, ..instance.next() };
            self.store.commit(&key, instance.version, &freed, Some(&lease), None).await.map_err(TaskError::Store)?;
            return Ok(None);
        }
        let history = match self.store.capabilities().history {
            Some(histories) => histories.history(&key).await.map_err(TaskError::Store)?,
            None => Vec::new(),
        };
        Ok(history.iter().rev().find(|entry| entry.call_id == id).map(|entry| entry.to.clone()))
    }

    async fn task_record(&self, id: &str, principal: Option<&Principal>) -> Result<(Snapshot, TaskRecord), TaskError> {
        let snapshot = self.store.load(&StoreKey::task(id)).await.map_err(TaskError::Store)?;
        match TaskRecord::read(&snapshot) {
            Some(record) if principal.map_or(record.owner.is_none(), |p| p.owns(record.owner.as_deref())) => {
                Ok((snapshot, record))
            }
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
                match self
                    .store
                    .commit(&StoreKey::task(id), before.version, &record.snapshot(&before), None, None)
                    .await
                {
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(error) => return Err(TaskError::Store(error)),
                    Ok(_) => return Ok(()),
                }
            }
            // Nobody runs it any more. Its runner is fenced first, so that nothing can commit
            // after this says it was cancelled; one that committed before it stopped completed.
            if self.fence_runner(id, &record).await?.is_some() {
                self.task(id, principal).await?;
                return Ok(());
            }
            record.status = TaskStatus::Cancelled;
            record.input_requests = None;
            record.status_message = Some("cancelled by the client".into());
            record.updated_at_ms = now_ms();
            match self.store.commit(&StoreKey::task(id), before.version, &record.snapshot(&before), None, None).await {
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
            // The record says what is still asked before the update is acknowledged, so
            // a `tasks/get` right after it never shows an answered key.
            Some(running) => {
                running.questions.answer(responses);
                self.record_questions(id, &running.questions).await;
            }
            // Another replica runs it: the answers wait in its record for its heartbeat.
            // Only answers to what it asks, and only while its runner lives: the record
            // holds at most one answer per outstanding question, however often a client
            // updates (a dead runner's record grew by every update until someone read it).
            None if record.is_running() && !record.lapsed(now_ms()) => {
                self.update_record(id, |record| {
                    if !record.is_running() || record.lapsed(now_ms()) {
                        return false;
                    }
                    let asked = record.input_requests.as_ref();
                    let answers: Vec<(String, Value)> = responses
                        .iter()
                        .filter(|(key, _)| asked.is_some_and(|asked| asked.contains_key(*key)))
                        .filter(|(key, value)| record.answers.get(*key) != Some(*value))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect();
                    if answers.is_empty() {
                        return false;
                    }
                    record.answers.extend(answers);
                    true
                })
                .await;
            }
            None => {}
        }
        Ok(())
    }
}

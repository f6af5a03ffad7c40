//! The tasks this process runs ([`RunningTasks`]), and how many may run and for how long
//! ([`TaskLimits`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::input::TaskQuestions;

/// How long a task and its result are kept by default, from its creation (`ttlMs`); a
/// task's call runs at most this long.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(15 * 60);

/// How many tasks one principal may have running at once, by default.
pub const DEFAULT_TASKS_PER_PRINCIPAL: usize = 16;

/// How many tasks one server process may run at once, by default.
pub const DEFAULT_TASKS_PER_SERVER: usize = 256;

/// How many tasks run, and how long they are kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskLimits {
    /// How long a task and its result are kept (`ttlMs`), and its call may run.
    pub(crate) ttl: Duration,
    /// Running tasks per principal (per caller, for callers that did not authenticate).
    pub(crate) per_principal: usize,
    /// Running tasks per server process.
    pub(crate) per_server: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self { ttl: DEFAULT_TASK_TTL, per_principal: DEFAULT_TASKS_PER_PRINCIPAL, per_server: DEFAULT_TASKS_PER_SERVER }
    }
}

/// A task running in this process: whose it is, how to cancel it, and how its questions
/// are answered.
#[derive(Debug, Clone)]
pub(super) struct Running {
    pub(super) owner: Option<String>,
    pub(super) cancel: CancellationToken,
    pub(super) questions: Arc<TaskQuestions>,
}

/// The tasks running in this process, by id.
#[derive(Debug, Default)]
pub(crate) struct RunningTasks(Mutex<HashMap<String, Running>>);

impl RunningTasks {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

//! Metrics through the `metrics` facade (free when no recorder is installed), and a
//! Prometheus recorder with its text rendering for `--metrics ADDR`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The metric names toolgate records.
pub mod names {
    /// Calls by `tool` and `outcome` (`ok`, or the error code).
    pub const CALLS: &str = "toolgate_calls_total";
    /// Refused or failed calls by `code`; a call asked for its confirmation
    /// (`CONFIRMATION_REQUIRED`, a step of the call) is not one.
    pub const REFUSALS: &str = "toolgate_refusals_total";
    /// Transitions committed, by `machine` and `event`.
    pub const TRANSITIONS: &str = "toolgate_transitions_total";
    /// How long calls take, by `tool`, in seconds.
    pub const CALL_SECONDS: &str = "toolgate_call_duration_seconds";
    /// Live Streamable HTTP sessions.
    pub const SESSIONS: &str = "toolgate_sessions";
    /// Open `subscriptions/listen` streams.
    pub const LISTENING_STREAMS: &str = "toolgate_listening_streams";
    /// Live flows in the store (connections, sessions, handles' flows), counted at each
    /// scrape (a shared store's count is every replica's: aggregate with `max`).
    pub const LIVE_FLOWS: &str = "toolgate_live_flows";
    /// Live instances of keyed machines in the store, counted at each scrape.
    pub const LIVE_INSTANCES: &str = "toolgate_live_instances";
    /// How long the state store takes, by `op` (`load`, `lease`, `commit`), in seconds.
    pub const STORE_SECONDS: &str = "toolgate_store_duration_seconds";
    /// MCP tasks by `status`: `working` when one starts, then the status it ends in
    /// (`completed`, `failed`, `cancelled`).
    pub const TASKS: &str = "toolgate_tasks_total";
    /// How long tasks run, from their start to their end, in seconds.
    pub const TASK_SECONDS: &str = "toolgate_task_duration_seconds";
    /// Attempts at effects by `effect` and `outcome`: `done`, `failed` (tried again),
    /// `cut_off` (its process stopped first; tried again), or `dead` (dead-lettered: not
    /// tried again).
    pub const EFFECTS: &str = "toolgate_effects_total";
    /// HTTP requests toolgate answered itself rather than through rmcp's service (the
    /// owned path: `tools/call` and `tools/list` of MCP 2026-07-28), by `method`.
    pub const OWNED_REQUESTS: &str = "toolgate_owned_requests_total";
}

/// Whether a recorder was installed: without one, recording is skipped before a metric's
/// key (and its labels) is even built.
static RECORDING: AtomicBool = AtomicBool::new(false);

fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// A finished call: counted by tool and outcome, refusals (not steps) by code, timed by tool.
pub(crate) fn record_call(tool: &'static str, code: Option<&str>, took: Duration) {
    if !recording() {
        return;
    }
    let outcome = code.unwrap_or("ok").to_string();
    if code.is_some_and(|code| !crate::error::is_a_step(code)) {
        metrics::counter!(names::REFUSALS, "code" => outcome.clone()).increment(1);
    }
    metrics::counter!(names::CALLS, "tool" => tool, "outcome" => outcome).increment(1);
    metrics::histogram!(names::CALL_SECONDS, "tool" => tool).record(took.as_secs_f64());
}

/// A request the owned path answered.
pub(crate) fn record_owned(method: &'static str) {
    if recording() {
        metrics::counter!(names::OWNED_REQUESTS, "method" => method).increment(1);
    }
}

/// When a store operation starts, if metrics are recorded (no clock read otherwise).
pub(crate) fn store_clock() -> Option<std::time::Instant> {
    recording().then(std::time::Instant::now)
}

/// A store operation `op` that started at `started` (from [`store_clock`]) is done.
pub(crate) fn record_store(op: &'static str, started: Option<std::time::Instant>) {
    if let Some(started) = started {
        metrics::histogram!(names::STORE_SECONDS, "op" => op).record(started.elapsed().as_secs_f64());
    }
}

/// A task that started (`working`) or ended in `status`, after running `took`.
pub(crate) fn record_task(status: &'static str, took: Option<Duration>) {
    if !recording() {
        return;
    }
    metrics::counter!(names::TASKS, "status" => status).increment(1);
    if let Some(took) = took {
        metrics::histogram!(names::TASK_SECONDS).record(took.as_secs_f64());
    }
}

/// How an attempt at `effect` ended: `done`, `failed` or `dead`.
pub(crate) fn record_effect(effect: &str, outcome: &'static str) {
    if !recording() {
        return;
    }
    metrics::counter!(names::EFFECTS, "effect" => effect.to_string(), "outcome" => outcome).increment(1);
}

/// A committed transition of `machine` by `event`.
pub(crate) fn record_transition(machine: &str, event: &'static str) {
    if !recording() {
        return;
    }
    metrics::counter!(names::TRANSITIONS, "machine" => machine.to_string(), "event" => event).increment(1);
}

/// The process's Prometheus recorder: installed once, rendered on request (the text
/// exposition format).
#[derive(Clone)]
pub struct PrometheusMetrics {
    handle: PrometheusHandle,
}

impl std::fmt::Debug for PrometheusMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrometheusMetrics")
    }
}

impl PrometheusMetrics {
    /// Installs the Prometheus recorder as the process's `metrics` recorder. Fails if
    /// another recorder is installed already.
    pub fn install() -> Result<Self, String> {
        let handle = PrometheusBuilder::new()
            .set_buckets(&[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
            .map_err(|e| e.to_string())?
            .install_recorder()
            .map_err(|e| format!("cannot install the Prometheus recorder: {e}"))?;
        metrics::describe_counter!(names::CALLS, "Tool calls by tool and outcome (ok, or the error code).");
        metrics::describe_counter!(names::REFUSALS, "Refused or failed tool calls by error code.");
        metrics::describe_counter!(names::TRANSITIONS, "Committed transitions by machine and event.");
        metrics::describe_histogram!(names::CALL_SECONDS, metrics::Unit::Seconds, "Tool call latency by tool.");
        metrics::describe_histogram!(names::STORE_SECONDS, metrics::Unit::Seconds, "State store latency by operation.");
        metrics::describe_gauge!(names::SESSIONS, "Live Streamable HTTP sessions.");
        metrics::describe_gauge!(names::LISTENING_STREAMS, "Open subscriptions/listen streams.");
        metrics::describe_gauge!(names::LIVE_FLOWS, "Live flows in the state store (sessions, connections, handles).");
        metrics::describe_gauge!(names::LIVE_INSTANCES, "Live instances of keyed machines in the state store.");
        RECORDING.store(true, Ordering::Relaxed);
        Ok(Self { handle })
    }

    /// Everything recorded so far, in the Prometheus text format.
    pub fn render(&self) -> String {
        self.handle.render()
    }
}

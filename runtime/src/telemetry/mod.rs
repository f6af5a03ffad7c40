//! Seeing a running server: a `tracing` span per call, Prometheus metrics, the W3C trace
//! context a request carries in `_meta` (SEP-414) — with the `otel` feature, the span
//! joins that trace for an OpenTelemetry exporter — and audit sinks for transitions.
//!
//! Nothing recorded here carries a state handle, a bearer token or a one-time code: a
//! flow is named by a digest of its store key ([`FlowId`](crate::flow::FlowId)), a
//! principal by its subject, and metric labels are tool names, machine ids, events and
//! error codes only.

mod audit;
mod dead_letters;
mod metrics;
mod refusals;
mod tasks;
mod trace;

pub use audit::{AuditRecord, AuditSink, JsonLinesSink};
pub(crate) use dead_letters::DeadLetterLog;
pub use metrics::{PrometheusMetrics, names};
pub(crate) use metrics::{
    record_call, record_effect, record_owned, record_store, record_task, record_transition, store_clock,
};
pub(crate) use refusals::Refusals;
pub(crate) use tasks::TaskLog;
pub(crate) use trace::{CallSpan, TraceParent};

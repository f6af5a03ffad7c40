//! The span of one call, and the W3C trace context (`traceparent`) a request may carry in
//! its `_meta` (SEP-414).

use std::time::Instant;

use tracing::field::Empty;

use crate::error::CorrelationId;

/// A W3C `traceparent`: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceParent {
    pub(crate) trace_id: String,
    pub(crate) parent_id: String,
    pub(crate) sampled: bool,
}

impl TraceParent {
    /// The `traceparent` of a request's `_meta`, if it carries a well-formed one (anything
    /// else is ignored, as the W3C specification asks).
    pub(crate) fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        Self::parse(meta.get("traceparent")?.as_str()?)
    }

    pub(crate) fn parse(value: &str) -> Option<Self> {
        let mut parts = value.trim().split('-');
        let (version, trace_id, parent_id, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex =
            |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let valid = hex(version, 2)
            && version != "ff"
            && (version != "00" || parts.next().is_none())
            && hex(trace_id, 32)
            && trace_id.bytes().any(|b| b != b'0')
            && hex(parent_id, 16)
            && parent_id.bytes().any(|b| b != b'0')
            && hex(flags, 2);
        valid.then(|| Self {
            trace_id: trace_id.to_string(),
            parent_id: parent_id.to_string(),
            sampled: u8::from_str_radix(flags, 16).is_ok_and(|f| f & 1 == 1),
        })
    }
}

/// The span of one tool call, and when it started. Its fields: `tool`, `domain`,
/// `correlation_id` (the call's, which an `INTERNAL` or `STORE_UNAVAILABLE` error shows
/// the model), `principal` (the subject), `instance` (the key) or `flow` (a digest, never
/// a handle), `from` and `to` (states), `verdict` (`ok`, `refused` or `failed`) and `code`
/// (the error's), `latency_ms`, and the `trace_id`/`parent_span_id` of an incoming
/// `traceparent`.
pub(crate) struct CallSpan {
    pub(crate) span: tracing::Span,
    started: Instant,
}

impl CallSpan {
    pub(crate) fn start(
        tool: &'static str,
        domain: Option<&'static str>,
        id: CorrelationId,
        parent: Option<&TraceParent>,
    ) -> Self {
        // The id is written out (`%`) only where a subscriber records the span.
        let span = tracing::info_span!(
            "tool_call",
            tool,
            domain,
            correlation_id = %id,
            principal = Empty,
            instance = Empty,
            flow = Empty,
            from = Empty,
            to = Empty,
            verdict = Empty,
            code = Empty,
            latency_ms = Empty,
            trace_id = Empty,
            parent_span_id = Empty,
        );
        if let Some(parent) = parent
            && !span.is_disabled()
        {
            span.record("trace_id", parent.trace_id.as_str());
            span.record("parent_span_id", parent.parent_id.as_str());
            #[cfg(feature = "otel")]
            continue_trace(&span, parent);
        }
        Self { span, started: Instant::now() }
    }

    /// How long since the call started.
    pub(crate) fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}

/// With OpenTelemetry (feature `otel`): the call's span becomes a child of the remote span
/// `parent` names, so an exporter installed in the subscriber (`tracing_opentelemetry`'s
/// layer) puts the call in the caller's trace.
#[cfg(feature = "otel")]
fn continue_trace(span: &tracing::Span, parent: &TraceParent) {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let (Ok(trace_id), Ok(span_id)) = (TraceId::from_hex(&parent.trace_id), SpanId::from_hex(&parent.parent_id)) else {
        return;
    };
    let flags = if parent.sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let remote = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_traceparents_are_read() {
        let good = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(good.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(good.sampled);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }
}

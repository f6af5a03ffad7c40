//! What only the runtime builds: the gate's refusals and the call pipeline's stops, each
//! a reserved code a handler cannot produce, and what a store's failure becomes.

use super::refusal::{
    ConfirmationFailed, ConfirmationLocked, ConfirmationRequired, ContextTooLarge, ContextUnreadable, DomainMismatch,
    DomainNotSelected, FlowBusy, Forbidden, GuardFailed, HandleRefusal, IdempotencyConflict, InsufficientScope,
    RateLimited, StoreUnavailable, TaskRunning, Timeout, Unauthenticated,
};
use super::tool_error::{Repr, ToolError, correlation_id};

/// What only the runtime builds: the gate's refusals and the call pipeline's stops.
impl ToolError {
    /// `FORBIDDEN`.
    pub(crate) fn forbidden(refusal: Forbidden) -> Self {
        Self::new(Repr::Forbidden(refusal))
    }

    /// The same `FORBIDDEN` refusal, saying when time moved the instance into its state.
    pub(crate) fn with_expired_at(mut self, at: String) -> Self {
        if let Repr::Forbidden(refusal) = &mut *self.0 {
            refusal.expired_at = Some(at);
        }
        self
    }

    /// `GUARD_FAILED`.
    pub(crate) fn guard_failed(refusal: GuardFailed) -> Self {
        Self::new(Repr::GuardFailed(refusal))
    }

    /// `DOMAIN_NOT_SELECTED`.
    pub(crate) fn domain_not_selected(refusal: DomainNotSelected) -> Self {
        Self::new(Repr::DomainNotSelected(refusal))
    }

    /// `DOMAIN_MISMATCH`.
    pub(crate) fn domain_mismatch(refusal: DomainMismatch) -> Self {
        Self::new(Repr::DomainMismatch(refusal))
    }

    /// `INVALID_HANDLE`: the handle is not one this server signed, or names a flow that is
    /// gone; `hint` says what to do instead.
    pub(crate) fn invalid_handle(message: impl Into<String>, hint: impl Into<Box<str>>) -> Self {
        Self::new(Repr::InvalidHandle(HandleRefusal { message: message.into(), hint: hint.into() }))
    }

    /// `HANDLE_EXPIRED`: the handle, or the flow it names, has expired.
    pub(crate) fn handle_expired(message: impl Into<String>, hint: impl Into<Box<str>>) -> Self {
        Self::new(Repr::HandleExpired(HandleRefusal { message: message.into(), hint: hint.into() }))
    }

    /// `FLOW_BUSY`: `what` (`instance` or `flow`) was held by another transitioning call
    /// past the wait limit.
    pub(crate) fn flow_busy(what: &'static str, retry_after_ms: u64) -> Self {
        Self::new(Repr::FlowBusy(FlowBusy { what, retry_after_ms }))
    }

    /// `TASK_RUNNING`: the task `task_id` (running `task_tool`) holds the instance until it
    /// ends.
    pub(crate) fn task_running(task_id: &str, task_tool: &str, instance: &str, retry_after_ms: u64) -> Self {
        Self::new(Repr::TaskRunning(TaskRunning {
            task_id: task_id.to_string(),
            task_tool: task_tool.to_string(),
            instance: instance.to_string(),
            retry_after_ms,
        }))
    }

    /// `UNAUTHENTICATED`: `tool` needs a principal and the call has none.
    pub(crate) fn unauthenticated(tool: &str) -> Self {
        Self::new(Repr::Unauthenticated(Unauthenticated {
            tool: tool.to_string(),
            hint: "authenticate: send the request with `Authorization: Bearer <token>` for a principal allowed to call this tool; nothing in the arguments can stand for it",
        }))
    }

    /// `INSUFFICIENT_SCOPE`: the principal lacks `scope`, which `tool` requires.
    pub(crate) fn insufficient_scope(tool: &str, scope: &str) -> Self {
        Self::new(Repr::InsufficientScope(InsufficientScope {
            tool: tool.to_string(),
            required_scope: scope.to_string(),
            hint: "this caller cannot use this tool; ask the user to act with credentials that carry the scope, or use another tool",
        }))
    }

    /// `CONFIRMATION_REQUIRED`: a code for `challenge_id` went out by `channel`.
    pub(crate) fn confirmation_required(tool: &str, challenge_id: String, channel: &str, expires_at: String) -> Self {
        Self::new(Repr::ConfirmationRequired(ConfirmationRequired {
            tool: tool.to_string(),
            challenge_id,
            channel: channel.to_string(),
            expires_at,
            hint: "ask the user for the one-time code they received (never guess or invent one), then repeat exactly this call, same arguments, adding `challenge_id` and `otp`",
        }))
    }

    /// `CONFIRMATION_FAILED`: why, and how many wrong codes the challenge still takes.
    pub(crate) fn confirmation_failed(tool: &str, reason: impl Into<String>, attempts_left: u32) -> Self {
        let hint = if attempts_left > 0 {
            "check the code with the user and repeat the same call with the same `challenge_id`"
        } else {
            "this challenge is void: call the tool again without `challenge_id` and `otp` to get a new code"
        };
        Self::new(Repr::ConfirmationFailed(ConfirmationFailed {
            tool: tool.to_string(),
            reason: reason.into(),
            attempts_left,
            hint,
        }))
    }

    /// `CONFIRMATION_LOCKED`: no new challenge for `retry_after_ms`.
    pub(crate) fn confirmation_locked(tool: &str, retry_after_ms: u64) -> Self {
        Self::new(Repr::ConfirmationLocked(ConfirmationLocked { tool: tool.to_string(), retry_after_ms }))
    }

    /// `IDEMPOTENCY_CONFLICT`: the key was used with other arguments.
    pub(crate) fn idempotency_conflict(tool: &str) -> Self {
        Self::new(Repr::IdempotencyConflict(IdempotencyConflict {
            tool: tool.to_string(),
            hint: "a new request needs a new idempotency key; reuse a key only to retry exactly the same call",
        }))
    }

    /// `RATE_LIMITED`: `limit` as declared (`30/minute`).
    pub(crate) fn rate_limited(limit: impl Into<String>, retry_after_ms: u64) -> Self {
        Self::new(Repr::RateLimited(RateLimited { limit: limit.into(), retry_after_ms }))
    }

    /// `TIMEOUT`: the handler ran past its `timeout_ms` deadline.
    pub(crate) fn timeout(timeout_ms: u64) -> Self {
        Self::new(Repr::Timeout(Timeout { timeout_ms }))
    }

    /// `CONTEXT_UNREADABLE`: the context of `instance` of `machine` does not read as
    /// `context_type`.
    pub(crate) fn context_unreadable(machine: &str, instance: &str, context_type: &'static str) -> Self {
        Self::new(Repr::ContextUnreadable(ContextUnreadable {
            machine: machine.to_string(),
            instance: instance.to_string(),
            context_type,
            hint: "the server's operator must migrate this instance's data (a field added without `#[serde(default)]`, or a type changed); retrying will not help",
        }))
    }

    /// `CONTEXT_TOO_LARGE`: a context of `size` bytes for `instance`, past `max_bytes`.
    pub(crate) fn context_too_large(instance: &str, size: usize, max_bytes: usize) -> Self {
        Self::new(Repr::ContextTooLarge(ContextTooLarge { instance: instance.to_string(), size, max_bytes }))
    }

    /// `CANCELLED`: the client cancelled the call.
    pub(crate) fn cancelled() -> Self {
        Self::new(Repr::Cancelled)
    }

    /// `INPUT_UNAVAILABLE`: the handler needed the client's answer and cannot have it.
    pub(crate) fn input_unavailable(message: impl Into<String>) -> Self {
        Self::new(Repr::InputUnavailable(message.into()))
    }

    /// `STORE_UNAVAILABLE`: `detail` goes to the server's log under the call's correlation id.
    pub(crate) fn store_unavailable(detail: impl std::fmt::Display, retry_after_ms: u64) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "state store unavailable");
        Self::new(Repr::StoreUnavailable(StoreUnavailable { retry_after_ms, correlation_id, outcome_unknown: false }))
    }

    /// `STORE_UNAVAILABLE` for a commit whose outcome is unknown (the store went away while
    /// it was on its way): `outcome_unknown: true`, never reported as success or as "nothing
    /// was committed".
    pub(crate) fn commit_outcome_unknown(detail: impl std::fmt::Display) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "a commit's outcome is unknown");
        Self::new(Repr::StoreUnavailable(StoreUnavailable {
            retry_after_ms: 1_000,
            correlation_id,
            outcome_unknown: true,
        }))
    }
}

/// What a store's failure tells the model: retryable when nothing was written, unknown when
/// a commit went unanswered, and what the database said of a handler's own SQL only in
/// the log.
pub(crate) fn store_failure(error: crate::store::StoreError) -> ToolError {
    match error {
        crate::store::StoreError::Unavailable(_) => ToolError::store_unavailable(error, 1000),
        crate::store::StoreError::LeaseLost => ToolError::store_unavailable(error, 0),
        crate::store::StoreError::OutcomeUnknown(_) => ToolError::commit_outcome_unknown(error),
        // What the database said of the handler's own SQL is for the log, not the model.
        crate::store::StoreError::Statement(_) => ToolError::internal(error),
        // Under the lease a conflict means the lease was lost (e.g. it expired on a
        // shared backend while the handler ran): nothing was committed.
        crate::store::StoreError::Conflict { .. } => {
            ToolError::store_unavailable(format_args!("{error}; the record changed under a held lease"), 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code::Code;

    fn forbidden(instance: Option<&str>) -> ToolError {
        ToolError::forbidden(Forbidden::discharging_a_draft(instance))
    }

    #[test]
    fn every_code_toolgate_produces_is_reserved() {
        let produced = [
            forbidden(None),
            ToolError::guard_failed(GuardFailed {
                tool: "t".into(),
                guard: "g".into(),
                machine: "m".into(),
                current_state: "s".into(),
                instance: None,
                reason: "no".into(),
                reason_code: "NO".into(),
                hint: None,
                retryable: false,
            }),
            ToolError::domain_not_selected(DomainNotSelected {
                tool: String::new(),
                tool_domain: String::new(),
                hint: String::new(),
            }),
            ToolError::domain_mismatch(DomainMismatch {
                tool: String::new(),
                active_domain: None,
                tool_domain: String::new(),
                declared_domain: String::new(),
                hint: String::new(),
            }),
            ToolError::invalid_argument("/x", "bad"),
            ToolError::not_found("gone"),
            ToolError::unauthenticated("t"),
            ToolError::insufficient_scope("t", "s"),
            ToolError::confirmation_required("t", "c".into(), "outbox", "2026-01-01T00:00:00Z".into()),
            ToolError::confirmation_failed("t", "wrong", 1),
            ToolError::confirmation_locked("t", 1),
            ToolError::idempotency_conflict("t"),
            ToolError::invalid_handle("", ""),
            ToolError::handle_expired("", ""),
            ToolError::flow_busy("flow", 1),
            ToolError::task_running("t", "tool", "PAY-1", 1),
            ToolError::rate_limited("1/second", 1),
            ToolError::timeout(1),
            ToolError::cancelled(),
            ToolError::input_unavailable("no answer"),
            ToolError::context_unreadable("m", "i", "T"),
            ToolError::context_too_large("i", 2, 1),
            ToolError::store_unavailable("down", 1),
            ToolError::internal("bug"),
        ];
        let codes: Vec<&str> = produced.iter().map(ToolError::code).collect();
        assert_eq!(codes, ToolError::RESERVED_CODES);
        for error in &produced {
            assert_eq!(error.reserved_code().map(Code::as_str), Some(error.code()));
        }
    }
}

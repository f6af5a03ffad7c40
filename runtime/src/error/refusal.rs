//! What toolgate itself says when it refuses or stops a call: one type per code, each
//! serialized into the `structuredContent` after `code` and `message`. Only the runtime
//! builds them, so a handler cannot speak for the gate.

use serde::Serialize;

use super::echo;
use super::field::FieldError;

/// `FORBIDDEN`: the tool exists but its machine's state does not allow it now.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{}", forbidden_message(self))]
pub(crate) struct Forbidden {
    /// The refused tool.
    pub(crate) tool: String,
    /// The machine that gates it.
    pub(crate) machine: String,
    /// The machine's current state in this flow.
    pub(crate) current_state: String,
    /// The tools this flow may call now.
    pub(crate) allowed_tools: Vec<String>,
    /// Tools whose success moves the flow to a state where `tool` is allowed.
    pub(crate) unlocked_by: Vec<String>,
    /// The instance the call named, for a keyed machine (`INV-2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
    /// When time moved the instance into `current_state` (an `after` transition: a quote
    /// that expired), RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) expired_at: Option<String>,
}

#[cfg(test)]
impl Forbidden {
    /// The refusal the error module's tests share: `invoice_discharge` on an invoice still
    /// in `draft` (`instance`, if keyed).
    pub(crate) fn discharging_a_draft(instance: Option<&str>) -> Self {
        Self {
            tool: "invoice_discharge".into(),
            machine: "invoice".into(),
            instance: instance.map(str::to_string),
            expired_at: None,
            current_state: "draft".into(),
            allowed_tools: vec!["invoice_submit".into()],
            unlocked_by: vec!["invoice_approve".into()],
        }
    }
}

/// `GUARD_FAILED`: the call's transition is guarded, and its guard refused the call on
/// the instance's data and the call's input; nothing was done.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error(
    "{reason} (guard `{guard}` of `{machine}`{}, in state `{current_state}`); nothing was done",
    instance_words(instance)
)]
pub(crate) struct GuardFailed {
    /// The refused tool.
    pub(crate) tool: String,
    /// The guard that refused, as the machine names it.
    pub(crate) guard: String,
    /// The machine.
    pub(crate) machine: String,
    /// The instance's state.
    pub(crate) current_state: String,
    /// The instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
    /// The guard's own words, why it refused.
    #[serde(skip)]
    pub(crate) reason: String,
    /// The guard's own code (`OVER_CAPTURED`).
    pub(crate) reason_code: String,
    /// What the guard says to do instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hint: Option<String>,
    /// The same call fails again until the instance's data changes.
    pub(crate) retryable: bool,
}

fn instance_words(instance: &Option<String>) -> String {
    instance.as_ref().map(|i| format!(" `{i}`")).unwrap_or_default()
}

fn forbidden_message(f: &Forbidden) -> String {
    let subject = match &f.instance {
        Some(instance) => format!("`{}` `{instance}`", f.machine),
        None => format!("`{}`", f.machine),
    };
    format!(
        "`{}` is not available while {subject} is in state `{}`; call one of the allowed tools instead",
        f.tool, f.current_state
    )
}

/// `DOMAIN_NOT_SELECTED`: a domain tool was called before any domain was selected
/// (strict intent lock).
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("`{tool}` belongs to domain `{tool_domain}`, and no domain is active yet")]
pub(crate) struct DomainNotSelected {
    /// The refused tool.
    pub(crate) tool: String,
    /// Its domain.
    pub(crate) tool_domain: String,
    /// What to do: the exact `switch_domain` call.
    pub(crate) hint: String,
}

/// `DOMAIN_MISMATCH`: the tool's domain, or the domain the call declared, is not the
/// active domain.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{}", mismatch_message(self))]
pub(crate) struct DomainMismatch {
    /// The refused tool.
    pub(crate) tool: String,
    /// The flow's active domain, if one is (`null` if none: the field is always there).
    pub(crate) active_domain: Option<String>,
    /// The tool's domain.
    pub(crate) tool_domain: String,
    /// The domain the call declared in its `domain` field.
    pub(crate) declared_domain: String,
    /// What to do, including the exact `switch_domain` call if the user changed intent.
    pub(crate) hint: String,
}

fn mismatch_message(m: &DomainMismatch) -> String {
    if m.declared_domain != m.tool_domain {
        format!(
            "`{}` belongs to domain `{}`, but the call declared domain `{}`",
            m.tool, m.tool_domain, m.declared_domain
        )
    } else {
        format!(
            "`{}` belongs to domain `{}`, but the active domain is `{}`",
            m.tool,
            m.tool_domain,
            m.active_domain.as_deref().unwrap_or("none")
        )
    }
}

/// `INVALID_ARGUMENT`: one or more arguments are malformed.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("invalid arguments: {}", describe_fields(.errors, *.more_errors))]
pub(super) struct InvalidArgument {
    /// One entry per offending field, the first [`MAX_LISTED_FIELD_ERRORS`] of them.
    pub(super) errors: Vec<FieldError>,
    /// How many more fields are wrong than `errors` lists.
    #[serde(skip_serializing_if = "is_zero")]
    pub(super) more_errors: usize,
}

/// The most fields one `INVALID_ARGUMENT` lists: what a model reads stays short, and a
/// call with thousands of wrong members gets an answer no larger than one with twenty.
pub(crate) const MAX_LISTED_FIELD_ERRORS: usize = 20;

/// The most bytes the listed fields take, in `errors` and the message together: the
/// structured error stays within [`echo::MAX_STRUCTURED_BYTES`](super::echo::MAX_STRUCTURED_BYTES).
const LISTED_FIELD_BYTES: usize = 4_096;

impl InvalidArgument {
    /// The first [`MAX_LISTED_FIELD_ERRORS`] of `errors` that fit in
    /// [`LISTED_FIELD_BYTES`], counting the rest; each field's name cut to
    /// [`echo::MAX_FIELD_CHARS`](super::echo::MAX_FIELD_CHARS) (a client chose it).
    pub(super) fn new(errors: impl IntoIterator<Item = FieldError>) -> Self {
        let mut listed = Vec::new();
        let mut more_errors = 0;
        let mut bytes = 0;
        for mut error in errors {
            if let std::borrow::Cow::Owned(shorter) = echo::cut(&error.field, echo::MAX_FIELD_CHARS) {
                error.field = shorter;
            }
            if let std::borrow::Cow::Owned(shorter) = echo::cut(&error.problem, echo::MAX_FIELD_CHARS * 2) {
                error.problem = shorter;
            }
            // Twice: the message repeats the field and its problem.
            let size = 2 * echo::size(&error);
            if listed.len() < MAX_LISTED_FIELD_ERRORS && bytes + size <= LISTED_FIELD_BYTES {
                bytes += size;
                listed.push(error);
            } else {
                more_errors += 1;
            }
        }
        Self { errors: listed, more_errors }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn describe_fields(errors: &[FieldError], more: usize) -> String {
    let parts: Vec<String> = errors.iter().map(|e| format!("`{}`: {}", e.field, e.problem)).collect();
    match more {
        0 => parts.join("; "),
        more => format!("{}; and {more} more", parts.join("; ")),
    }
}

/// `INVALID_HANDLE` and `HANDLE_EXPIRED`: the call's state handle is not one this server
/// signed, names a flow that is gone, or has expired.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{message}")]
pub(super) struct HandleRefusal {
    /// What is wrong with the handle (the result's `message`).
    #[serde(skip)]
    pub(super) message: String,
    /// What to do instead.
    pub(super) hint: Box<str>,
}

/// `FLOW_BUSY`: another transitioning call held the instance or flow longer than the
/// server waits.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("another call is changing this {what} right now; nothing was done, try again shortly")]
pub(super) struct FlowBusy {
    /// `instance` or `flow`.
    #[serde(skip)]
    pub(super) what: &'static str,
    /// When retrying makes sense.
    pub(super) retry_after_ms: u64,
}

/// `TASK_RUNNING`: a task (an MCP task, running a tool that changes this instance) holds
/// the instance until it ends; reads still answer.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error(
    "`{instance}` is busy: task `{task_id}` (`{task_tool}`) is changing it; nothing was done, read it or try again once the task has ended"
)]
pub(super) struct TaskRunning {
    /// The task holding the instance.
    pub(super) task_id: String,
    /// The tool the task runs.
    pub(super) task_tool: String,
    /// The instance's id.
    pub(super) instance: String,
    /// When retrying makes sense.
    pub(super) retry_after_ms: u64,
}

/// `RATE_LIMITED`: the tool's declared rate limit is reached; the handler did not run.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("`{limit}` reached: wait {retry_after_ms} ms, then call again")]
pub(super) struct RateLimited {
    /// The limit, as declared (`30/minute`).
    pub(super) limit: String,
    /// When a call will be admitted again.
    pub(super) retry_after_ms: u64,
}

/// `TIMEOUT`: the handler ran past its deadline; its work was dropped and nothing was
/// committed.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("the call took longer than its {timeout_ms} ms deadline and was stopped; nothing was committed")]
pub(super) struct Timeout {
    /// The deadline that passed.
    pub(super) timeout_ms: u64,
}

/// `CONTEXT_UNREADABLE`: the instance's stored context no longer reads as the type the
/// server declares (the type changed incompatibly); nothing was done.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("the data of {machine} `{instance}` no longer reads as `{context_type}` on this server; nothing was done")]
pub(super) struct ContextUnreadable {
    /// The machine.
    pub(super) machine: String,
    /// The instance.
    pub(super) instance: String,
    /// The context type it should read as.
    pub(super) context_type: &'static str,
    /// What to do.
    pub(super) hint: &'static str,
}

/// `CONTEXT_TOO_LARGE`: the context a handler set is larger than the server keeps for
/// one instance; nothing was committed.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error(
    "the new data of `{instance}` is {size} bytes, more than the {max_bytes} an instance may hold; nothing was committed"
)]
pub(super) struct ContextTooLarge {
    /// The instance.
    pub(super) instance: String,
    /// The serialized size the handler set.
    pub(super) size: usize,
    /// The bound.
    pub(super) max_bytes: usize,
}

/// `STORE_UNAVAILABLE`: the flow store could not be reached, or lost a race it should
/// not have; nothing was committed. The detail is in the server's log under
/// `correlation_id`.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{}", store_unavailable_message(self))]
pub(super) struct StoreUnavailable {
    /// When retrying makes sense.
    pub(super) retry_after_ms: u64,
    /// Where the server's log has the detail.
    pub(super) correlation_id: String,
    /// The store went away while a commit was on its way: it may or may not have happened.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) outcome_unknown: bool,
}

fn store_unavailable_message(refusal: &StoreUnavailable) -> String {
    let id = &refusal.correlation_id;
    if refusal.outcome_unknown {
        format!(
            "the state store stopped answering while the call was being committed: it may or may not have happened; read the object's state before calling again (correlation id {id})"
        )
    } else {
        format!("the state store is unavailable; nothing was committed (correlation id {id})")
    }
}

/// `INTERNAL`: a bug on the server side (a handler that panicked, an output that does not
/// serialize, …). The model sees only the correlation id; the detail is in the server's
/// log under it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("internal error; nothing was committed (correlation id {correlation_id})")]
pub(super) struct Internal {
    /// Where the server's log has the detail.
    pub(super) correlation_id: String,
}

/// `UNAUTHENTICATED`: the tool needs an authenticated principal and the call has none.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("`{tool}` needs an authenticated caller, and this request carries no accepted credentials")]
pub(super) struct Unauthenticated {
    /// The refused tool.
    pub(super) tool: String,
    /// What to do.
    pub(super) hint: &'static str,
}

/// `INSUFFICIENT_SCOPE`: the principal lacks a scope the tool requires.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("`{tool}` requires the scope `{required_scope}`, which this caller was not granted")]
pub(super) struct InsufficientScope {
    /// The refused tool.
    pub(super) tool: String,
    /// The first scope the tool requires that the principal lacks.
    pub(super) required_scope: String,
    /// What to do.
    pub(super) hint: &'static str,
}

/// `CONFIRMATION_REQUIRED`: the call moves money or data and must be confirmed with a
/// one-time code bound to exactly this call; nothing ran.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error(
    "`{tool}` must be confirmed: a one-time code was sent by {channel}; repeat this exact call with `challenge_id` and the code as `otp`"
)]
pub(super) struct ConfirmationRequired {
    /// The tool.
    pub(super) tool: String,
    /// The challenge the code confirms.
    pub(super) challenge_id: String,
    /// How the code reaches the person (`outbox`, `sms`, `totp`).
    pub(super) channel: String,
    /// When the challenge expires, RFC 3339.
    pub(super) expires_at: String,
    /// What to do.
    pub(super) hint: &'static str,
}

/// `CONFIRMATION_FAILED`: the code is wrong, the challenge is gone, used, expired, another
/// principal's, or was issued for another call.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("the confirmation of `{tool}` failed: {reason}")]
pub(super) struct ConfirmationFailed {
    /// The tool.
    pub(super) tool: String,
    /// Why, in words.
    pub(super) reason: String,
    /// Wrong codes the challenge still accepts.
    pub(super) attempts_left: u32,
    /// What to do.
    pub(super) hint: &'static str,
}

/// `CONFIRMATION_LOCKED`: too many wrong codes; confirmations of this tool by this
/// principal are refused for a while.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("confirmations of `{tool}` are locked after too many wrong codes; retry after {retry_after_ms} ms")]
pub(super) struct ConfirmationLocked {
    /// The tool.
    pub(super) tool: String,
    /// When a new challenge may be issued.
    pub(super) retry_after_ms: u64,
}

/// `IDEMPOTENCY_CONFLICT`: the idempotency key was used before with other arguments.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("`{tool}` was called before with this idempotency key and other arguments; nothing ran")]
pub(super) struct IdempotencyConflict {
    /// The tool.
    pub(super) tool: String,
    /// What to do.
    pub(super) hint: &'static str,
}

//! The error contract: every refusal and failure a model can see, with a stable `code`.
//!
//! Refusals and handler failures become *tool results* (`isError: true`) whose
//! `structuredContent` always has `code` and `message` plus the fields the code promises.
//! [`ToolError::to_structured`] is the one place that mapping lives; each code's fields
//! are the serialization of its own type (`refusal`, [`Failure`]).
//!
//! A handler can say `INVALID_ARGUMENT`, `NOT_FOUND`, `INTERNAL` or a code of its own; the
//! other codes are the gate's, and only the runtime can build them.

pub(crate) mod echo;
mod failure;
mod field;
pub(crate) mod jsonrpc;
mod refusal;

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

pub use failure::{Failure, Retry};
pub use field::FieldError;
use refusal::{
    ConfirmationFailed, ConfirmationLocked, ConfirmationRequired, ContextTooLarge, ContextUnreadable, FlowBusy,
    HandleRefusal, IdempotencyConflict, InsufficientScope, Internal, InvalidArgument, RateLimited, StoreUnavailable,
    TaskRunning, Timeout, Unauthenticated,
};
pub(crate) use refusal::{DomainMismatch, DomainNotSelected, Forbidden, GuardFailed};

/// Declares the codes toolgate produces, once: the [`Code`] enum, its spelling, and
/// [`ToolError::RESERVED_CODES`] all come from this table.
macro_rules! codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $code:literal,)*) => {
        /// A code toolgate itself produces.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Code {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Code {
            /// The code as the model sees it in `structuredContent.code`.
            pub(crate) const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $code,)*
                }
            }
        }

        impl ToolError {
            /// Every code toolgate itself produces. A handler's own code (a [`Failure`])
            /// never equals one of them: see [`Failure::new`].
            pub const RESERVED_CODES: &'static [&'static str] = &[$($code),*];
        }
    };
}

/// Whether `code` (a reply's `structuredContent.code`) is a step of a call rather than a
/// refusal of it: `CONFIRMATION_REQUIRED` asks for the code that completes the call, as the
/// flow means it to. The console's refusals page and `toolgate_refusals_total` leave these
/// out (the page counts them apart, as confirmations asked).
pub(crate) fn is_a_step(code: &str) -> bool {
    code == Code::ConfirmationRequired.as_str()
}

codes! {
    /// The tool exists but its machine's state does not allow it now.
    Forbidden = "FORBIDDEN",
    /// A guard of the transition refused the call on the instance's data.
    GuardFailed = "GUARD_FAILED",
    /// No domain is active yet (strict intent lock).
    DomainNotSelected = "DOMAIN_NOT_SELECTED",
    /// The tool's or the declared domain is not the active one.
    DomainMismatch = "DOMAIN_MISMATCH",
    /// One or more arguments are malformed.
    InvalidArgument = "INVALID_ARGUMENT",
    /// The thing the call refers to does not exist.
    NotFound = "NOT_FOUND",
    /// The tool needs an authenticated principal and the call has none.
    Unauthenticated = "UNAUTHENTICATED",
    /// The principal lacks a scope the tool requires.
    InsufficientScope = "INSUFFICIENT_SCOPE",
    /// The call must be confirmed with a one-time code.
    ConfirmationRequired = "CONFIRMATION_REQUIRED",
    /// A wrong, replayed, mismatched or expired confirmation.
    ConfirmationFailed = "CONFIRMATION_FAILED",
    /// Too many wrong codes.
    ConfirmationLocked = "CONFIRMATION_LOCKED",
    /// An idempotency key used before with other arguments.
    IdempotencyConflict = "IDEMPOTENCY_CONFLICT",
    /// A forged, foreign or gone flow handle.
    InvalidHandle = "INVALID_HANDLE",
    /// An expired flow handle.
    HandleExpired = "HANDLE_EXPIRED",
    /// Another transitioning call holds the instance or flow.
    FlowBusy = "FLOW_BUSY",
    /// A task holds the instance until it ends.
    TaskRunning = "TASK_RUNNING",
    /// The tool's rate limit is reached.
    RateLimited = "RATE_LIMITED",
    /// The handler ran past its deadline.
    Timeout = "TIMEOUT",
    /// The client cancelled the call.
    Cancelled = "CANCELLED",
    /// The call needs to ask the client something it cannot ask or the client cannot answer.
    InputUnavailable = "INPUT_UNAVAILABLE",
    /// The instance's stored context no longer reads as the declared type.
    ContextUnreadable = "CONTEXT_UNREADABLE",
    /// A handler set a context larger than an instance may hold.
    ContextTooLarge = "CONTEXT_TOO_LARGE",
    /// The flow store is down.
    StoreUnavailable = "STORE_UNAVAILABLE",
    /// A bug on the server side.
    Internal = "INTERNAL",
}

/// Why a tool call did not succeed. Handlers return it; the gate produces it too.
///
/// A handler builds one with [`ToolError::invalid_argument`] (or
/// [`invalid_arguments`](ToolError::invalid_arguments) for several fields),
/// [`ToolError::not_found`], [`ToolError::failed`] or a [`Failure`], and
/// [`ToolError::internal`] for its own bugs. The gate's codes (`FORBIDDEN`, `TIMEOUT`,
/// …) cannot be built outside toolgate: a model that reads one can trust that toolgate
/// said it.
///
/// It is one pointer wide, so a handler's `Result` costs no more than its success.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(Box<Repr>);

/// What a [`ToolError`] holds: one variant per code, its payload a type of its own.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum Repr {
    #[error("{0}")]
    Forbidden(Forbidden),
    #[error("{0}")]
    GuardFailed(GuardFailed),
    #[error("{0}")]
    DomainNotSelected(DomainNotSelected),
    #[error("{0}")]
    DomainMismatch(DomainMismatch),
    #[error("{0}")]
    InvalidArgument(InvalidArgument),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unauthenticated(Unauthenticated),
    #[error("{0}")]
    InsufficientScope(InsufficientScope),
    #[error("{0}")]
    ConfirmationRequired(ConfirmationRequired),
    #[error("{0}")]
    ConfirmationFailed(ConfirmationFailed),
    #[error("{0}")]
    ConfirmationLocked(ConfirmationLocked),
    #[error("{0}")]
    IdempotencyConflict(IdempotencyConflict),
    #[error("{0}")]
    InvalidHandle(HandleRefusal),
    #[error("{0}")]
    HandleExpired(HandleRefusal),
    #[error("{0}")]
    FlowBusy(FlowBusy),
    #[error("{0}")]
    TaskRunning(TaskRunning),
    #[error("{0}")]
    RateLimited(RateLimited),
    #[error("{0}")]
    Timeout(Timeout),
    // The client asked not to hear back, so this result rarely travels.
    #[error("the call was cancelled; nothing was committed")]
    Cancelled,
    #[error("{0}; nothing was committed")]
    InputUnavailable(String),
    #[error("{0}")]
    ContextUnreadable(ContextUnreadable),
    #[error("{0}")]
    ContextTooLarge(ContextTooLarge),
    #[error("{0}")]
    StoreUnavailable(StoreUnavailable),
    #[error("{0}")]
    Failed(Failure),
    #[error("{0}")]
    Internal(Internal),
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ToolError {}

impl From<Failure> for ToolError {
    fn from(failure: Failure) -> Self {
        Self::new(Repr::Failed(failure))
    }
}

/// What handlers build.
impl ToolError {
    /// An `INVALID_ARGUMENT` error for one field: a name, a dotted path or a JSON pointer,
    /// reported as a JSON pointer (`id` → `/id`; see [`FieldError::new`]).
    ///
    /// ```
    /// use toolgate_runtime::ToolError;
    /// let error = ToolError::invalid_argument("amount", "must be at most 100");
    /// assert_eq!(error.to_structured()["errors"][0]["field"], "/amount");
    /// ```
    pub fn invalid_argument(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::invalid_arguments([FieldError::new(field, problem)])
    }

    /// An `INVALID_ARGUMENT` error listing every offending field at once, so the model can
    /// fix them all in one retry. Give it at least one field. At most twenty are listed;
    /// past them, `more_errors` says how many more there are.
    ///
    /// ```
    /// use toolgate_runtime::{FieldError, ToolError};
    /// let error = ToolError::invalid_arguments([
    ///     FieldError::new("departure", "is in the past").example("2027-03-01T09:00:00+01:00"),
    ///     FieldError::new("passengers", "must be at most 9").got(12),
    /// ]);
    /// assert_eq!(error.field_errors().len(), 2);
    /// assert_eq!(error.to_structured()["errors"][1]["field"], "/passengers");
    /// ```
    pub fn invalid_arguments(errors: impl IntoIterator<Item = FieldError>) -> Self {
        Self::new(Repr::InvalidArgument(InvalidArgument::new(errors)))
    }

    /// A `NOT_FOUND` error: the thing the call refers to does not exist. Say how to find
    /// one that does (`no invoice INV-9; invoice ids look like INV-1042`).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Repr::NotFound(message.into()))
    }

    /// A failure with an application-defined `code` (SCREAMING_SNAKE_CASE by convention;
    /// a code toolgate reserves is served as `APP_<CODE>`). To add advice or fields to its
    /// `structuredContent`, build a [`Failure`] instead.
    pub fn failed(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Failure::new(code, message).into()
    }

    /// An `INTERNAL` error: `detail` (a database error, a bug) goes to the server's log
    /// under a fresh correlation id, and only that id reaches the model.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "internal error");
        Self::new(Repr::Internal(Internal { correlation_id }))
    }
}

/// What only the runtime builds: the gate's refusals and the call pipeline's stops.
impl ToolError {
    fn new(repr: Repr) -> Self {
        Self(Box::new(repr))
    }

    /// `FORBIDDEN`.
    pub(crate) fn forbidden(refusal: Forbidden) -> Self {
        Self::new(Repr::Forbidden(refusal))
    }

    /// `DOMAIN_NOT_SELECTED`.
    /// The same `FORBIDDEN` refusal, saying when time moved the instance into its state.
    pub(crate) fn with_expired_at(mut self, at: String) -> Self {
        if let Repr::Forbidden(refusal) = &mut *self.0 {
            refusal.expired_at = Some(at);
        }
        self
    }

    pub(crate) fn guard_failed(refusal: GuardFailed) -> Self {
        Self::new(Repr::GuardFailed(refusal))
    }

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

    /// `STORE_UNAVAILABLE`: `detail` goes to the server's log under a fresh correlation id.
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

/// What anyone reads.
impl ToolError {
    /// The stable code the model sees in `structuredContent.code`.
    pub fn code(&self) -> &str {
        match self.classify() {
            Ok(code) => code.as_str(),
            Err(failure) => failure.code(),
        }
    }

    /// The code, if toolgate reserves it (everything but a [`Failure`]).
    pub(crate) fn reserved_code(&self) -> Option<Code> {
        self.classify().ok()
    }

    /// The reserved code, or the handler's failure that carries its own.
    fn classify(&self) -> Result<Code, &Failure> {
        Ok(match &*self.0 {
            Repr::Forbidden(_) => Code::Forbidden,
            Repr::GuardFailed(_) => Code::GuardFailed,
            Repr::DomainNotSelected(_) => Code::DomainNotSelected,
            Repr::DomainMismatch(_) => Code::DomainMismatch,
            Repr::InvalidArgument(_) => Code::InvalidArgument,
            Repr::NotFound(_) => Code::NotFound,
            Repr::InvalidHandle(_) => Code::InvalidHandle,
            Repr::HandleExpired(_) => Code::HandleExpired,
            Repr::FlowBusy(_) => Code::FlowBusy,
            Repr::TaskRunning(_) => Code::TaskRunning,
            Repr::RateLimited(_) => Code::RateLimited,
            Repr::Unauthenticated(_) => Code::Unauthenticated,
            Repr::IdempotencyConflict(_) => Code::IdempotencyConflict,
            Repr::ConfirmationRequired(_) => Code::ConfirmationRequired,
            Repr::ConfirmationFailed(_) => Code::ConfirmationFailed,
            Repr::ConfirmationLocked(_) => Code::ConfirmationLocked,
            Repr::InsufficientScope(_) => Code::InsufficientScope,
            Repr::Timeout(_) => Code::Timeout,
            Repr::Cancelled => Code::Cancelled,
            Repr::InputUnavailable(_) => Code::InputUnavailable,
            Repr::ContextUnreadable(_) => Code::ContextUnreadable,
            Repr::ContextTooLarge(_) => Code::ContextTooLarge,
            Repr::StoreUnavailable(_) => Code::StoreUnavailable,
            Repr::Internal(_) => Code::Internal,
            Repr::Failed(failure) => return Err(failure),
        })
    }

    /// The offending fields of an `INVALID_ARGUMENT` error (none for any other code).
    pub fn field_errors(&self) -> &[FieldError] {
        match &*self.0 {
            Repr::InvalidArgument(refusal) => &refusal.errors,
            _ => &[],
        }
    }

    /// The handler's [`Failure`], for an error built from one.
    pub fn failure(&self) -> Option<&Failure> {
        match &*self.0 {
            Repr::Failed(failure) => Some(failure),
            _ => None,
        }
    }

    /// The `structuredContent` of the error result: `code`, `message` and the fields the
    /// code promises (for a [`Failure`], its advice and details).
    pub fn to_structured(&self) -> Value {
        let mut out = Map::new();
        out.insert("code".into(), self.code().into());
        out.insert("message".into(), self.to_string().into());
        let fields = match &*self.0 {
            Repr::Forbidden(refusal) => to_value(refusal),
            Repr::GuardFailed(refusal) => to_value(refusal),
            Repr::DomainNotSelected(refusal) => to_value(refusal),
            Repr::DomainMismatch(refusal) => to_value(refusal),
            Repr::InvalidArgument(refusal) => to_value(refusal),
            Repr::InvalidHandle(refusal) | Repr::HandleExpired(refusal) => to_value(refusal),
            Repr::FlowBusy(refusal) => to_value(refusal),
            Repr::TaskRunning(refusal) => to_value(refusal),
            Repr::RateLimited(refusal) => to_value(refusal),
            Repr::Unauthenticated(refusal) => to_value(refusal),
            Repr::IdempotencyConflict(refusal) => to_value(refusal),
            Repr::ConfirmationRequired(refusal) => to_value(refusal),
            Repr::ConfirmationFailed(refusal) => to_value(refusal),
            Repr::ConfirmationLocked(refusal) => to_value(refusal),
            Repr::InsufficientScope(refusal) => to_value(refusal),
            Repr::Timeout(refusal) => to_value(refusal),
            Repr::ContextUnreadable(refusal) => to_value(refusal),
            Repr::ContextTooLarge(refusal) => to_value(refusal),
            Repr::StoreUnavailable(refusal) => to_value(refusal),
            Repr::Internal(internal) => to_value(internal),
            Repr::Failed(failure) => to_value(&failure.advice()),
            Repr::NotFound(_) | Repr::Cancelled | Repr::InputUnavailable(_) => Map::new(),
        };
        for (key, value) in fields {
            // `code` and `message` are the contract; nothing a payload says overwrites them.
            out.entry(key).or_insert(value);
        }
        // What it says back of its input is bounded, whoever built it (a handler's own
        // failure included): each string, then the whole, keeping `code`.
        echo::bound_map(&mut out);
        if echo::size(&out) > echo::MAX_STRUCTURED_BYTES {
            let code = out.remove("code").unwrap_or_default();
            let message = out.remove("message").unwrap_or_default();
            let mut bounded = Map::from_iter([("code".to_string(), code), ("message".to_string(), message)]);
            for (key, value) in out {
                if echo::size(&bounded) + key.len() + echo::size(&value) < echo::MAX_STRUCTURED_BYTES {
                    bounded.insert(key, value);
                }
            }
            out = bounded;
        }
        Value::Object(out)
    }
}

/// A payload's fields. Payloads are structs of strings, numbers and JSON values, which
/// always serialize to an object.
fn to_value(payload: &impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(payload) {
        Ok(Value::Object(fields)) => fields,
        other => unreachable!("an error payload serializes to an object, not {other:?}"),
    }
}

/// A short random id that ties a result the model saw to the server's log.
fn correlation_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..12].to_string()
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
    use serde_json::json;

    use super::*;

    fn forbidden(instance: Option<&str>) -> ToolError {
        ToolError::forbidden(Forbidden {
            tool: "invoice_discharge".into(),
            machine: "invoice".into(),
            instance: instance.map(str::to_string),
            expired_at: None,
            current_state: "draft".into(),
            allowed_tools: vec!["invoice_submit".into()],
            unlocked_by: vec!["invoice_approve".into()],
        })
    }

    /// The exact `structuredContent` of `error`, key order included.
    fn wire(error: &ToolError) -> String {
        serde_json::to_string(&error.to_structured()).unwrap()
    }

    #[test]
    fn forbidden_has_every_promised_field() {
        let value = forbidden(Some("INV-2")).to_structured();
        assert_eq!(value["code"], "FORBIDDEN");
        assert_eq!(value["current_state"], "draft");
        assert_eq!(value["instance"], "INV-2");
        assert!(value["message"].as_str().unwrap().contains("`invoice` `INV-2` is in state `draft`"), "{value}");
        assert_eq!(value["allowed_tools"], json!(["invoice_submit"]));
        assert_eq!(value["unlocked_by"], json!(["invoice_approve"]));
        assert!(value["message"].as_str().unwrap().contains("invoice_discharge"));
    }

    #[test]
    fn a_commit_of_unknown_outcome_never_says_nothing_happened() {
        let unknown = ToolError::commit_outcome_unknown("connection dropped");
        let content = unknown.to_structured();
        assert_eq!(
            (content["code"].as_str(), content["outcome_unknown"].as_bool()),
            (Some("STORE_UNAVAILABLE"), Some(true))
        );
        let message = content["message"].as_str().unwrap();
        assert!(
            message.contains("may or may not have happened") && !message.contains("nothing was committed"),
            "{message}"
        );
        let down = ToolError::store_unavailable("refused", 1).to_structured();
        assert!(down.get("outcome_unknown").is_none(), "{down}");
    }

    #[test]
    fn every_code_keeps_its_wire_shape() {
        let message = |error: &ToolError| error.to_string();
        let unkeyed = forbidden(None);
        assert_eq!(
            wire(&unkeyed),
            json!({
                "code": "FORBIDDEN", "message": message(&unkeyed), "tool": "invoice_discharge",
                "machine": "invoice", "current_state": "draft", "allowed_tools": ["invoice_submit"],
                "unlocked_by": ["invoice_approve"],
            })
            .to_string()
        );
        let keyed = forbidden(Some("INV-2"));
        assert!(wire(&keyed).ends_with(r#""unlocked_by":["invoice_approve"],"instance":"INV-2"}"#), "{}", wire(&keyed));

        let not_selected = ToolError::domain_not_selected(DomainNotSelected {
            tool: "bus_search".into(),
            tool_domain: "bus".into(),
            hint: "switch".into(),
        });
        assert_eq!(
            wire(&not_selected),
            json!({
                "code": "DOMAIN_NOT_SELECTED", "message": message(&not_selected), "tool": "bus_search",
                "tool_domain": "bus", "hint": "switch",
            })
            .to_string()
        );
        let mismatch = ToolError::domain_mismatch(DomainMismatch {
            tool: "bus_search".into(),
            active_domain: None,
            tool_domain: "bus".into(),
            declared_domain: "flight".into(),
            hint: "pick".into(),
        });
        assert_eq!(
            wire(&mismatch),
            json!({
                "code": "DOMAIN_MISMATCH", "message": message(&mismatch), "tool": "bus_search",
                "active_domain": null, "tool_domain": "bus", "declared_domain": "flight", "hint": "pick",
            })
            .to_string()
        );

        let cases = [
            (ToolError::not_found("no invoice `INV-9`"), json!({})),
            (ToolError::invalid_handle("not a handle", "start over"), json!({ "hint": "start over" })),
            (ToolError::handle_expired("expired", "start over"), json!({ "hint": "start over" })),
            (ToolError::flow_busy("flow", 5000), json!({ "retry_after_ms": 5000 })),
            (ToolError::rate_limited("30/minute", 1200), json!({ "limit": "30/minute", "retry_after_ms": 1200 })),
            (ToolError::timeout(30_000), json!({ "timeout_ms": 30_000 })),
            (ToolError::cancelled(), json!({})),
        ];
        for (error, fields) in cases {
            let mut expected = json!({ "code": error.code(), "message": message(&error) });
            expected.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
            assert_eq!(wire(&error), expected.to_string());
        }

        let store = ToolError::store_unavailable("connection refused", 1000);
        let id = store.to_structured()["correlation_id"].as_str().unwrap().to_string();
        assert_eq!(
            wire(&store),
            json!({
                "code": "STORE_UNAVAILABLE", "message": message(&store), "retry_after_ms": 1000, "correlation_id": id,
            })
            .to_string()
        );
    }

    #[test]
    fn messages_say_what_happened() {
        assert_eq!(ToolError::not_found("no invoice `INV-9`").to_string(), "no invoice `INV-9`");
        assert_eq!(
            ToolError::rate_limited("30/minute", 1200).to_string(),
            "`30/minute` reached: wait 1200 ms, then call again"
        );
        assert!(ToolError::flow_busy("instance", 1).to_string().contains("changing this instance"));
        assert_eq!(ToolError::invalid_handle("not a handle", "start over").to_string(), "not a handle");
        assert_eq!(
            ToolError::invalid_arguments([FieldError::new("a", "x"), FieldError::new("b", "y")]).to_string(),
            "invalid arguments: `/a`: x; `/b`: y"
        );
    }

    #[test]
    fn tool_error_stays_small_enough_to_return_by_value() {
        // Handlers return it in every `Result`; one pointer keeps `Result<T, ToolError>`
        // no bigger than it has to be.
        assert_eq!(std::mem::size_of::<ToolError>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Result<(), ToolError>>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn internal_errors_show_only_a_correlation_id() {
        let value = ToolError::internal("connection refused: db.internal:5432").to_structured();
        assert_eq!(value["code"], "INTERNAL");
        let id = value["correlation_id"].as_str().unwrap();
        assert_eq!(id.len(), 12);
        assert!(value["message"].as_str().unwrap().contains(id));
        assert!(!value.to_string().contains("5432"), "{value}");
    }

    #[test]
    fn a_handler_cannot_claim_a_reserved_code() {
        assert_eq!(ToolError::failed("FORBIDDEN", "no").code(), "APP_FORBIDDEN");
        assert_eq!(ToolError::failed("FORBIDDEN", "no").reserved_code(), None);
        assert_eq!(ToolError::failed("PAYMENT_DECLINED", "no").code(), "PAYMENT_DECLINED");
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

    #[test]
    fn invalid_argument_lists_fields_as_pointers() {
        let error = ToolError::invalid_arguments([FieldError::new("id", "must not be empty")
            .expected("INV-<digits>")
            .example("INV-1")]);
        let value = error.to_structured();
        assert_eq!(value["errors"][0]["field"], "/id");
        assert_eq!(value["errors"][0]["example"], "INV-1");
        assert!(value["errors"][0].get("got").is_none());
        assert_eq!(ToolError::invalid_argument("order.lines", "is empty").field_errors()[0].field(), "/order/lines");
    }

    #[test]
    fn readers_see_what_handlers_built() {
        let error = ToolError::from(Failure::new("PAYMENT_DECLINED", "declined").with_hint("another card"));
        assert_eq!(error.failure().and_then(Failure::hint), Some("another card"));
        assert!(ToolError::not_found("x").failure().is_none());
        assert!(ToolError::not_found("x").field_errors().is_empty());
    }
}

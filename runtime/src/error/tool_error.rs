//! [`ToolError`]: why a tool call did not succeed, one variant per code, what a handler
//! builds, and what anyone reads of it.

use std::borrow::Cow;

use super::code::{self, Code};
use super::failure::Failure;
use super::field::FieldError;
use super::refusal::{
    ConfirmationFailed, ConfirmationLocked, ConfirmationRequired, ContextTooLarge, ContextUnreadable, DomainMismatch,
    DomainNotSelected, FlowBusy, Forbidden, GuardFailed, HandleRefusal, IdempotencyConflict, InsufficientScope,
    Internal, InvalidArgument, RateLimited, StoreUnavailable, TaskRunning, Timeout, Unauthenticated,
};

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
pub struct ToolError(pub(super) Box<Repr>);

/// What a [`ToolError`] holds: one variant per code, its payload a type of its own.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum Repr {
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

impl ToolError {
    /// Every code toolgate itself produces. A handler's own code (a [`Failure`])
    /// never equals one of them: see [`Failure::new`].
    pub const RESERVED_CODES: &'static [&'static str] = code::RESERVED_CODES;

    /// The one way to build it: what a handler builds (below) and what only the runtime
    /// builds (`reserved.rs`) both go through here.
    pub(super) fn new(repr: Repr) -> Self {
        Self(Box::new(repr))
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
    /// under the call's correlation id (its `tool_call` span's), and only that id reaches
    /// the model.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "internal error");
        Self::new(Repr::Internal(Internal { correlation_id }))
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
}

/// The id that ties a result the model saw to the server's log: the call's, whose
/// `tool_call` span carries it too.
pub(super) fn correlation_id() -> String {
    super::CorrelationId::current().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_handler_cannot_claim_a_reserved_code() {
        assert_eq!(ToolError::failed("FORBIDDEN", "no").code(), "APP_FORBIDDEN");
        assert_eq!(ToolError::failed("FORBIDDEN", "no").reserved_code(), None);
        assert_eq!(ToolError::failed("PAYMENT_DECLINED", "no").code(), "PAYMENT_DECLINED");
    }

    #[test]
    fn readers_see_what_handlers_built() {
        let error = ToolError::from(Failure::new("PAYMENT_DECLINED", "declined").with_hint("another card"));
        assert_eq!(error.failure().and_then(Failure::hint), Some("another card"));
        assert!(ToolError::not_found("x").failure().is_none());
        assert!(ToolError::not_found("x").field_errors().is_empty());
    }
}

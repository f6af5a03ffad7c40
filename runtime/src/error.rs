//! The error contract: every refusal and failure a model can see, with a stable `code`.
//!
//! Refusals and handler failures become *tool results* (`isError: true`) whose
//! `structuredContent` always has `code` and `message` plus the fields the code promises
//! (design §6). [`ToolError::to_structured`] is the one place that mapping lives.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Why a tool call did not succeed. Handlers return it; the gate produces it too.
///
/// Handlers usually build one with [`ToolError::invalid_argument`],
/// [`ToolError::not_found`] or [`ToolError::failed`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool exists but the flow's state does not allow it now.
    #[error("{0}")]
    Forbidden(Box<Forbidden>),
    /// A domain tool was called before any domain was selected (strict intent lock).
    #[error("{0}")]
    DomainNotSelected(Box<DomainNotSelected>),
    /// The tool's domain, or the domain the call declared, is not the active domain.
    #[error("{0}")]
    DomainMismatch(Box<DomainMismatch>),
    /// One or more arguments are malformed.
    #[error("invalid arguments: {}", describe_fields(.errors))]
    InvalidArgument {
        /// One entry per offending field.
        errors: Vec<FieldError>,
    },
    /// The thing the call refers to does not exist.
    #[error("{message}")]
    NotFound {
        /// What was not found, said for the model.
        message: String,
    },
    /// The call's state handle is not one this server signed (forged, altered, another
    /// server's key), or names a flow that is gone.
    #[error("{message}")]
    InvalidHandle {
        /// What is wrong with the handle.
        message: String,
        /// What to do instead.
        hint: Box<str>,
    },
    /// The call's state handle, or the flow it names, has expired.
    #[error("{message}")]
    HandleExpired {
        /// What expired.
        message: String,
        /// What to do instead.
        hint: Box<str>,
    },
    /// Another transitioning call held the instance or flow longer than the server waits.
    #[error("another call is changing this {what} right now; nothing was done, try again shortly")]
    FlowBusy {
        /// `instance` or `flow`.
        what: &'static str,
        /// When retrying makes sense.
        retry_after_ms: u64,
    },
    /// The tool's declared rate limit is reached; the handler did not run.
    #[error("`{limit}` reached: wait {retry_after_ms} ms, then call again")]
    RateLimited {
        /// The limit, as declared (`30/minute`).
        limit: String,
        /// When a call will be admitted again.
        retry_after_ms: u64,
    },
    /// The handler ran past its deadline; its work was dropped and nothing was committed.
    #[error("the call took longer than its {timeout_ms} ms deadline and was stopped; nothing was committed")]
    Timeout {
        /// The deadline that passed.
        timeout_ms: u64,
    },
    /// The client cancelled the call; its handler was dropped and nothing was committed.
    /// (The client asked not to hear back, so this result rarely travels.)
    #[error("the call was cancelled; nothing was committed")]
    Cancelled,
    /// The flow store could not be reached, or lost a race it should not have; nothing
    /// was committed. The detail is in the server's log under `correlation_id`.
    #[error("the state store is unavailable; nothing was committed (correlation id {correlation_id})")]
    StoreUnavailable {
        /// Where the server's log has the detail.
        correlation_id: String,
        /// When retrying makes sense.
        retry_after_ms: u64,
    },
    /// A failure with an application-defined code.
    #[error("{0}")]
    Failed(Box<Failure>),
    /// A bug on the server side (a handler that panicked, an output that does not
    /// serialize, …). The model sees only the correlation id; the detail is in the
    /// server's log under it. Build it with [`ToolError::internal`].
    #[error("internal error; nothing was committed (correlation id {correlation_id})")]
    Internal {
        /// Where the server's log has the detail.
        correlation_id: String,
    },
}

/// The payload of [`ToolError::Forbidden`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", forbidden_message(self))]
pub struct Forbidden {
    /// The refused tool.
    pub tool: String,
    /// The machine that gates it.
    pub machine: String,
    /// The instance the call named, for a keyed machine (`INV-2`).
    pub instance: Option<String>,
    /// The machine's current state in this flow.
    pub current_state: String,
    /// The tools this flow may call now.
    pub allowed_tools: Vec<String>,
    /// Tools whose success moves the flow to a state where `tool` is allowed.
    pub unlocked_by: Vec<String>,
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

/// The payload of [`ToolError::DomainNotSelected`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{tool}` belongs to domain `{tool_domain}`, and no domain is active yet")]
pub struct DomainNotSelected {
    /// The refused tool.
    pub tool: String,
    /// Its domain.
    pub tool_domain: String,
    /// What to do: the exact `switch_domain` call.
    pub hint: String,
}

/// The payload of [`ToolError::DomainMismatch`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", mismatch_message(self))]
pub struct DomainMismatch {
    /// The refused tool.
    pub tool: String,
    /// The flow's active domain, if one is.
    pub active_domain: Option<String>,
    /// The tool's domain.
    pub tool_domain: String,
    /// The domain the call declared in its `domain` field.
    pub declared_domain: String,
    /// What to do, including the exact `switch_domain` call if the user changed intent.
    pub hint: String,
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

/// The payload of [`ToolError::Failed`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// A stable, SCREAMING_SNAKE_CASE code the model can branch on.
    pub code: Cow<'static, str>,
    /// What happened, said for the model.
    pub message: String,
    /// What the model can do next (`hint` in `structuredContent`).
    pub hint: Option<String>,
    /// Whether and when calling again can succeed (`retryable`, `retry_after_ms`).
    pub retry: Option<Retry>,
    /// Extra fields merged into `structuredContent`.
    pub details: Map<String, Value>,
}

/// A [`Failure`]'s advice on calling again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The same call will fail again until something else changes (`retryable: false`).
    Never,
    /// The same call may succeed after this wait (`retryable: true`, `retry_after_ms`).
    After(std::time::Duration),
}

impl Failure {
    /// A failure with an application-defined `code` (SCREAMING_SNAKE_CASE by convention)
    /// and no details yet; `?` or `.into()` turns it into a [`ToolError`].
    ///
    /// A code toolgate reserves ([`ToolError::RESERVED_CODES`]) would tell the model
    /// something toolgate did not say (that the gate refused, that nothing was
    /// committed), so it is served as `APP_<CODE>` instead, and the server logs a warning.
    ///
    /// ```
    /// use toolgate_runtime::{Failure, ToolError};
    /// let error: ToolError = Failure::new("PAYMENT_DECLINED", "the card was declined")
    ///     .with_hint("ask the customer for another card, then call again")
    ///     .never_retry()
    ///     .with_detail("decline_reason", "insufficient_funds")
    ///     .into();
    /// let result = error.to_structured();
    /// assert_eq!(result["code"], "PAYMENT_DECLINED");
    /// assert_eq!(result["hint"], "ask the customer for another card, then call again");
    /// assert_eq!(result["retryable"], false);
    /// assert_eq!(result["decline_reason"], "insufficient_funds");
    /// ```
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let mut code = code.into();
        if ToolError::RESERVED_CODES.contains(&code.as_ref()) {
            tracing::warn!(%code, "a handler used a code toolgate reserves; it is served as APP_{code}");
            code = format!("APP_{code}").into();
        }
        Self { code, message: message.into(), hint: None, retry: None, details: Map::new() }
    }

    /// Says what the model can do next: `hint` in `structuredContent`.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Says the same call may succeed after `wait`: `retryable: true` and
    /// `retry_after_ms` (at least 1) in `structuredContent`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolgate_runtime::{Failure, ToolError};
    /// let error: ToolError = Failure::new("BANK_OFFLINE", "the bank did not answer")
    ///     .retry_after(Duration::from_secs(30))
    ///     .into();
    /// assert_eq!(error.to_structured()["retry_after_ms"], 30_000);
    /// assert_eq!(error.to_structured()["retryable"], true);
    /// ```
    pub fn retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry = Some(Retry::After(wait));
        self
    }

    /// Says the same call will fail again until something else changes:
    /// `retryable: false` in `structuredContent`.
    pub fn never_retry(mut self) -> Self {
        self.retry = Some(Retry::Never);
        self
    }

    /// Adds a field to the failure's `structuredContent` (`code`, `message`, `hint`,
    /// `retryable` and `retry_after_ms` stay as set).
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }
}

impl Failure {
    /// `hint`, `retryable` and `retry_after_ms` first, then the details.
    fn advice(&self) -> Value {
        let mut fields = Map::new();
        if let Some(hint) = &self.hint {
            fields.insert("hint".into(), hint.as_str().into());
        }
        match self.retry {
            Some(Retry::Never) => {
                fields.insert("retryable".into(), false.into());
            }
            Some(Retry::After(wait)) => {
                let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                fields.insert("retryable".into(), true.into());
                fields.insert("retry_after_ms".into(), ms.into());
            }
            None => {}
        }
        for (key, value) in &self.details {
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
        Value::Object(fields)
    }
}

impl From<Failure> for ToolError {
    fn from(failure: Failure) -> Self {
        Self::Failed(Box::new(failure))
    }
}

/// One offending field of an [`ToolError::InvalidArgument`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldError {
    /// The field, as a JSON pointer into the arguments (`/id`, `/items/2/amount`).
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
    /// The expected format, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// A valid example value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    /// The value that was received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<Value>,
}

impl FieldError {
    /// A field error with just a path and a problem.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: field.into(), problem: problem.into(), expected: None, example: None, got: None }
    }

    /// Adds the expected format.
    pub fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// Adds a valid example value.
    pub fn example(mut self, example: impl Into<Value>) -> Self {
        self.example = Some(example.into());
        self
    }

    /// Adds the value that was received.
    pub fn got(mut self, got: impl Into<Value>) -> Self {
        self.got = Some(got.into());
        self
    }
}

/// A short random id that ties a result the model saw to the server's log.
fn correlation_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    id[..12].to_string()
}

fn describe_fields(errors: &[FieldError]) -> String {
    let parts: Vec<String> = errors.iter().map(|e| format!("`{}`: {}", e.field, e.problem)).collect();
    parts.join("; ")
}

impl ToolError {
    /// An `INVALID_ARGUMENT` error for one field.
    pub fn invalid_argument(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::InvalidArgument { errors: vec![FieldError::new(field, problem)] }
    }

    /// An `INTERNAL` error: `detail` (a database error, a bug) goes to the server's log
    /// under a fresh correlation id, and only that id reaches the model.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "internal error");
        Self::Internal { correlation_id }
    }

    /// A `STORE_UNAVAILABLE` error: `detail` goes to the server's log under a fresh
    /// correlation id.
    pub fn store_unavailable(detail: impl std::fmt::Display, retry_after_ms: u64) -> Self {
        let correlation_id = correlation_id();
        tracing::error!(%correlation_id, %detail, "state store unavailable");
        Self::StoreUnavailable { correlation_id, retry_after_ms }
    }

    /// A `NOT_FOUND` error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound { message: message.into() }
    }

    /// A failure with an application-defined `code` (SCREAMING_SNAKE_CASE by convention).
    /// To add fields to its `structuredContent`, build a [`Failure`] instead.
    pub fn failed(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Failure::new(code, message).into()
    }

    /// Every code toolgate itself produces. A handler's own code (a [`Failure`]) never
    /// equals one of them: see [`Failure::new`].
    pub const RESERVED_CODES: &'static [&'static str] = &[
        "FORBIDDEN",
        "DOMAIN_NOT_SELECTED",
        "DOMAIN_MISMATCH",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "INVALID_HANDLE",
        "HANDLE_EXPIRED",
        "FLOW_BUSY",
        "RATE_LIMITED",
        "TIMEOUT",
        "CANCELLED",
        "STORE_UNAVAILABLE",
        "INTERNAL",
    ];

    /// The stable code the model sees in `structuredContent.code`.
    pub fn code(&self) -> &str {
        match self {
            Self::Forbidden(_) => "FORBIDDEN",
            Self::DomainNotSelected(_) => "DOMAIN_NOT_SELECTED",
            Self::DomainMismatch(_) => "DOMAIN_MISMATCH",
            Self::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Self::NotFound { .. } => "NOT_FOUND",
            Self::InvalidHandle { .. } => "INVALID_HANDLE",
            Self::HandleExpired { .. } => "HANDLE_EXPIRED",
            Self::FlowBusy { .. } => "FLOW_BUSY",
            Self::RateLimited { .. } => "RATE_LIMITED",
            Self::Timeout { .. } => "TIMEOUT",
            Self::Cancelled => "CANCELLED",
            Self::StoreUnavailable { .. } => "STORE_UNAVAILABLE",
            Self::Failed(failure) => &failure.code,
            Self::Internal { .. } => "INTERNAL",
        }
    }

    /// The `structuredContent` of the error result: `code`, `message` and the fields the
    /// code promises.
    pub fn to_structured(&self) -> Value {
        let mut out = Map::new();
        out.insert("code".into(), self.code().into());
        out.insert("message".into(), self.to_string().into());
        let extra = match self {
            Self::Forbidden(forbidden) => {
                let Forbidden { tool, machine, instance, current_state, allowed_tools, unlocked_by } = &**forbidden;
                let mut fields = json!({
                    "tool": tool,
                    "machine": machine,
                    "current_state": current_state,
                    "allowed_tools": allowed_tools,
                    "unlocked_by": unlocked_by,
                });
                if let Some(instance) = instance {
                    fields["instance"] = instance.as_str().into();
                }
                fields
            }
            Self::DomainNotSelected(refusal) => json!({
                "tool": refusal.tool,
                "tool_domain": refusal.tool_domain,
                "hint": refusal.hint,
            }),
            Self::DomainMismatch(refusal) => json!({
                "tool": refusal.tool,
                "active_domain": refusal.active_domain,
                "tool_domain": refusal.tool_domain,
                "declared_domain": refusal.declared_domain,
                "hint": refusal.hint,
            }),
            Self::InvalidArgument { errors } => json!({ "errors": errors }),
            Self::InvalidHandle { hint, .. } | Self::HandleExpired { hint, .. } => json!({ "hint": &**hint }),
            Self::FlowBusy { retry_after_ms, .. } => json!({ "retry_after_ms": retry_after_ms }),
            Self::Timeout { timeout_ms } => json!({ "timeout_ms": timeout_ms }),
            Self::RateLimited { limit, retry_after_ms } => json!({ "limit": limit, "retry_after_ms": retry_after_ms }),
            Self::StoreUnavailable { retry_after_ms, correlation_id } => {
                json!({ "retry_after_ms": retry_after_ms, "correlation_id": correlation_id })
            }
            Self::Internal { correlation_id } => json!({ "correlation_id": correlation_id }),
            Self::Failed(failure) => failure.advice(),
            Self::NotFound { .. } | Self::Cancelled => Value::Null,
        };
        if let Value::Object(extra) = extra {
            for (key, value) in extra {
                // `code` and `message` are the contract; details never overwrite them.
                out.entry(key).or_insert(value);
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_has_every_promised_field() {
        let error = ToolError::Forbidden(Box::new(Forbidden {
            tool: "invoice_discharge".into(),
            machine: "invoice".into(),
            instance: Some("INV-2".into()),
            current_state: "draft".into(),
            allowed_tools: vec!["invoice_submit".into()],
            unlocked_by: vec!["invoice_approve".into()],
        }));
        let value = error.to_structured();
        assert_eq!(value["code"], "FORBIDDEN");
        assert_eq!(value["current_state"], "draft");
        assert_eq!(value["instance"], "INV-2");
        assert!(value["message"].as_str().unwrap().contains("`invoice` `INV-2` is in state `draft`"), "{value}");
        assert_eq!(value["allowed_tools"], json!(["invoice_submit"]));
        assert_eq!(value["unlocked_by"], json!(["invoice_approve"]));
        assert!(value["message"].as_str().unwrap().contains("invoice_discharge"));
    }

    #[test]
    fn tool_error_stays_small_enough_to_return_by_value() {
        // Handlers return it in every `Result`; clippy's `result_large_err` is at 128 bytes.
        assert!(std::mem::size_of::<ToolError>() <= 48, "{}", std::mem::size_of::<ToolError>());
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
        assert_eq!(ToolError::failed("PAYMENT_DECLINED", "no").code(), "PAYMENT_DECLINED");
    }

    #[test]
    fn every_code_toolgate_produces_is_reserved() {
        let produced = [
            ToolError::Forbidden(Box::new(Forbidden {
                tool: String::new(),
                machine: String::new(),
                instance: None,
                current_state: String::new(),
                allowed_tools: vec![],
                unlocked_by: vec![],
            })),
            ToolError::DomainNotSelected(Box::new(DomainNotSelected {
                tool: String::new(),
                tool_domain: String::new(),
                hint: String::new(),
            })),
            ToolError::DomainMismatch(Box::new(DomainMismatch {
                tool: String::new(),
                active_domain: None,
                tool_domain: String::new(),
                declared_domain: String::new(),
                hint: String::new(),
            })),
            ToolError::invalid_argument("/x", "bad"),
            ToolError::not_found("gone"),
            ToolError::InvalidHandle { message: String::new(), hint: "".into() },
            ToolError::HandleExpired { message: String::new(), hint: "".into() },
            ToolError::FlowBusy { what: "flow", retry_after_ms: 1 },
            ToolError::RateLimited { limit: "1/second".into(), retry_after_ms: 1 },
            ToolError::Timeout { timeout_ms: 1 },
            ToolError::Cancelled,
            ToolError::store_unavailable("down", 1),
            ToolError::internal("bug"),
        ];
        let codes: Vec<&str> = produced.iter().map(ToolError::code).collect();
        assert_eq!(codes, ToolError::RESERVED_CODES);
    }

    #[test]
    fn details_cannot_overwrite_the_code() {
        let error = ToolError::from(Failure::new("PAYMENT_DECLINED", "card declined").with_detail("code", "OK"));
        assert_eq!(error.to_structured()["code"], "PAYMENT_DECLINED");
    }

    #[test]
    fn invalid_argument_lists_fields() {
        let error = ToolError::InvalidArgument {
            errors: vec![FieldError::new("id", "must not be empty").expected("INV-<digits>").example("INV-1")],
        };
        let value = error.to_structured();
        assert_eq!(value["errors"][0]["field"], "id");
        assert_eq!(value["errors"][0]["example"], "INV-1");
        assert!(value["errors"][0].get("got").is_none());
    }
}

//! [`Failure`]: a handler's own failure, with an application-defined code and advice.

use std::borrow::Cow;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::code::RESERVED_CODES;

/// A failure with an application-defined code: what a handler returns when the call
/// was well-formed and allowed, yet did not succeed (a declined payment, a closed
/// account). `?` or `.into()` turns it into a [`ToolError`](crate::ToolError).
///
/// Built with [`Failure::new`] and refined with [`with_hint`](Failure::with_hint),
/// [`retry_after`](Failure::retry_after), [`never_retry`](Failure::never_retry) and
/// [`with_detail`](Failure::with_detail); its fields are private so that a code toolgate
/// reserves cannot be slipped past [`Failure::new`].
///
/// It is one pointer wide, so a guard's or a handler's `Result` costs no more than its
/// success.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.parts.message)]
pub struct Failure {
    parts: Box<Parts>,
}

/// What a [`Failure`] holds.
#[derive(Debug, Clone, PartialEq)]
struct Parts {
    code: Cow<'static, str>,
    message: String,
    hint: Option<String>,
    retry: Option<Retry>,
    /// Never holds a key the rest of the contract owns (see `with_detail`), so the
    /// serialized advice needs no precedence rule.
    details: Map<String, Value>,
}

/// A [`Failure`]'s advice on calling again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The same call will fail again until something else changes (`retryable: false`).
    Never,
    /// The same call may succeed after this wait (`retryable: true`, `retry_after_ms`).
    After(Duration),
}

/// The keys of a failure's `structuredContent` that its constructors own.
const CONTRACT_KEYS: [&str; 2] = ["code", "message"];
const HINT_KEY: &str = "hint";
const RETRY_KEYS: [&str; 2] = ["retryable", "retry_after_ms"];

impl Failure {
    /// A failure with an application-defined `code` (SCREAMING_SNAKE_CASE by convention)
    /// and no details yet; `?` or `.into()` turns it into a [`ToolError`](crate::ToolError).
    ///
    /// A code toolgate reserves
    /// ([`ToolError::RESERVED_CODES`](crate::ToolError::RESERVED_CODES)) would tell the
    /// model something toolgate did not say (that the gate refused, that nothing was
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
    ///
    /// assert_eq!(Failure::new("FORBIDDEN", "no").code(), "APP_FORBIDDEN");
    /// ```
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let mut code = code.into();
        if RESERVED_CODES.contains(&code.as_ref()) {
            tracing::warn!(%code, "a handler used a code toolgate reserves; it is served as APP_{code}");
            code = format!("APP_{code}").into();
        }
        Self { parts: Box::new(Parts { code, message: message.into(), hint: None, retry: None, details: Map::new() }) }
    }

    /// Says what the model can do next: `hint` in `structuredContent`.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.parts.details.shift_remove(HINT_KEY);
        self.parts.hint = Some(hint.into());
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
    pub fn retry_after(self, wait: Duration) -> Self {
        self.with_retry(Retry::After(wait))
    }

    /// Says the same call will fail again until something else changes:
    /// `retryable: false` in `structuredContent`.
    pub fn never_retry(self) -> Self {
        self.with_retry(Retry::Never)
    }

    fn with_retry(mut self, retry: Retry) -> Self {
        for key in RETRY_KEYS {
            self.parts.details.shift_remove(key);
        }
        self.parts.retry = Some(retry);
        self
    }

    /// Adds a field to the failure's `structuredContent`. `code` and `message` stay as
    /// set, and so do `hint`, `retryable` and `retry_after_ms` whichever is called first:
    /// a detail under one of those keys is dropped.
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let owned = CONTRACT_KEYS.contains(&key.as_str())
            || (key == HINT_KEY && self.parts.hint.is_some())
            || (RETRY_KEYS.contains(&key.as_str()) && self.parts.retry.is_some());
        if !owned {
            self.parts.details.insert(key, value.into());
        }
        self
    }

    /// The code the model sees (`APP_<CODE>` for a code toolgate reserves).
    pub fn code(&self) -> &str {
        &self.parts.code
    }

    /// What happened, said for the model.
    pub fn message(&self) -> &str {
        &self.parts.message
    }

    /// What the model can do next, if the failure says.
    pub fn hint(&self) -> Option<&str> {
        self.parts.hint.as_deref()
    }

    /// Whether and when calling again can succeed, if the failure says.
    pub fn retry(&self) -> Option<Retry> {
        self.parts.retry
    }

    /// The fields the failure adds to `structuredContent` after `code` and `message`.
    pub(super) fn advice(&self) -> Advice<'_> {
        let (retryable, retry_after_ms) = match self.parts.retry {
            None => (None, None),
            Some(Retry::Never) => (Some(false), None),
            Some(Retry::After(wait)) => (Some(true), Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1))),
        };
        Advice { hint: self.parts.hint.as_deref(), retryable, retry_after_ms, details: &self.parts.details }
    }
}

/// A [`Failure`]'s part of `structuredContent`: its advice first, then its details.
#[derive(Serialize)]
pub(super) struct Advice<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retryable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(flatten)]
    details: &'a Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ToolError;

    fn structured(failure: Failure) -> Value {
        ToolError::from(failure).to_structured()
    }

    #[test]
    fn a_handler_cannot_claim_a_reserved_code() {
        assert_eq!(Failure::new("FORBIDDEN", "no").code(), "APP_FORBIDDEN");
        assert_eq!(Failure::new("PAYMENT_DECLINED", "no").code(), "PAYMENT_DECLINED");
    }

    #[test]
    fn advice_comes_before_details_in_the_order_it_was_given() {
        let value = structured(
            Failure::new("PAYMENT_DECLINED", "card declined")
                .with_detail("decline_reason", "insufficient_funds")
                .with_hint("ask for another card")
                .retry_after(Duration::from_millis(1500))
                .with_detail("card", "visa"),
        );
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            json!({
                "code": "PAYMENT_DECLINED",
                "message": "card declined",
                "hint": "ask for another card",
                "retryable": true,
                "retry_after_ms": 1500,
                "decline_reason": "insufficient_funds",
                "card": "visa",
            })
            .to_string()
        );
    }

    #[test]
    fn details_never_overwrite_the_contract_or_the_advice() {
        let value = structured(
            Failure::new("PAYMENT_DECLINED", "card declined")
                .with_detail("code", "OK")
                .with_detail("message", "fine")
                .with_detail("hint", "from a detail")
                .with_hint("from with_hint")
                .never_retry()
                .with_detail("retryable", true),
        );
        assert_eq!(value["code"], "PAYMENT_DECLINED");
        assert_eq!(value["message"], "card declined");
        assert_eq!(value["hint"], "from with_hint");
        assert_eq!(value["retryable"], false);
    }

    #[test]
    fn a_detail_may_use_an_advice_key_the_failure_does_not_set() {
        let value = structured(Failure::new("QUOTA", "over quota").with_detail("hint", "upgrade the plan"));
        assert_eq!(value["hint"], "upgrade the plan");
    }

    #[test]
    fn a_wait_under_a_millisecond_is_one_millisecond() {
        let value = structured(Failure::new("BUSY", "busy").retry_after(Duration::from_micros(10)));
        assert_eq!(value["retry_after_ms"], 1);
    }
}

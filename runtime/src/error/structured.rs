//! The `structuredContent` of an error result: the one place a [`ToolError`] becomes what
//! the model reads, each code's fields the serialization of its own payload, bounded.

use serde::Serialize;
use serde_json::{Map, Value};

use super::echo;
use super::tool_error::{Repr, ToolError};

impl ToolError {
    /// The `structuredContent` of the error result: `code`, `message` and the fields the
    /// code promises (for a [`Failure`](crate::Failure), its advice and details).
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::field::FieldError;
    use crate::error::refusal::{DomainMismatch, DomainNotSelected, Forbidden};

    fn forbidden(instance: Option<&str>) -> ToolError {
        ToolError::forbidden(Forbidden::discharging_a_draft(instance))
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
    fn internal_errors_show_only_a_correlation_id() {
        let value = ToolError::internal("connection refused: db.internal:5432").to_structured();
        assert_eq!(value["code"], "INTERNAL");
        let id = value["correlation_id"].as_str().unwrap();
        assert_eq!(id.len(), 12);
        assert!(value["message"].as_str().unwrap().contains(id));
        assert!(!value.to_string().contains("5432"), "{value}");
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
}

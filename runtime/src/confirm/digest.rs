//! The transaction a confirmation is bound to, as one digest: the principal, the tool, the
//! instance or flow it acts on, and the call's arguments in a canonical form, so that
//! equivalent calls give the same digest and different calls never do.
//!
//! Canonical arguments:
//! - object keys in byte order (whatever order the client wrote them in);
//! - strings in Unicode NFC (`é` typed as one code point or as `e` + a combining accent);
//! - numbers by value: `1`, `1.0` and `1e0` are one number; integers stay exact;
//! - money by value: `{"amount": "12.50", "currency": "EUR"}` and `{"amount_minor": 1250,
//!   "currency": "EUR"}` are one amount.
//!
//! The fields a confirmation itself travels in (`challenge_id`, `otp`) and the state
//! handle are not part of the transaction.

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

use crate::types::Money;

/// `value` in canonical form (see the module's documentation).
pub(crate) fn canonical(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(text.nfc().collect()),
        Value::Number(number) => Value::Number(canonical_number(number)),
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(fields) => {
            if let Ok(money) = Money::from_json(value) {
                let mut amount = Map::new();
                amount.insert("amount_minor".into(), money.minor_units().into());
                amount.insert("currency".into(), money.currency().code().into());
                return Value::Object(amount);
            }
            // Sorted by the normalized key: two spellings of one key are one key.
            let mut sorted: Vec<(String, Value)> =
                fields.iter().map(|(k, v)| (k.nfc().collect(), canonical(v))).collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(sorted.into_iter().collect())
        }
        Value::Null | Value::Bool(_) => value.clone(),
    }
}

/// A number by value: an integral value as an integer, anything else as the shortest
/// `f64` that round-trips.
fn canonical_number(number: &Number) -> Number {
    if number.is_i64() || number.is_u64() {
        return number.clone();
    }
    match number.as_f64() {
        Some(float) if float.fract() == 0.0 && float.abs() < 9_007_199_254_740_992.0 => Number::from(float as i64),
        Some(float) => Number::from_f64(float).unwrap_or_else(|| number.clone()),
        None => number.clone(),
    }
}

/// Serializes canonical JSON with sorted keys whatever the map type preserves.
fn write_sorted(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_sorted(&fields[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What a confirmation is bound to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transaction<'a> {
    /// The principal's key (`Principal::key`).
    pub(crate) principal: &'a str,
    pub(crate) tool: &'a str,
    /// The instance's or flow's store key, or empty for a call that acts on neither.
    pub(crate) subject: &'a str,
    /// The arguments, without the confirmation's own fields and the handle.
    pub(crate) arguments: &'a Map<String, Value>,
}

impl Transaction<'_> {
    /// The digest: SHA-256 over the canonical JSON of all four, hex.
    pub(crate) fn digest(&self) -> String {
        let arguments = canonical(&Value::Object(self.arguments.clone()));
        let mut text = String::new();
        let whole = serde_json::json!({
            "principal": self.principal,
            "tool": self.tool,
            "subject": self.subject,
            "arguments": arguments,
        });
        write_sorted(&whole, &mut text);
        Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn digest(arguments: Value) -> String {
        let arguments = arguments.as_object().unwrap().clone();
        Transaction { principal: "\"a\":\"p1\"", tool: "pay_capture", subject: "instance:PAY-1", arguments: &arguments }
            .digest()
    }

    #[test]
    fn equivalent_calls_have_one_digest() {
        let base = digest(json!({ "amount": { "amount": "12.50", "currency": "EUR" }, "note": "café", "n": 1 }));
        for same in [
            json!({ "n": 1, "note": "café", "amount": { "currency": "EUR", "amount": "12.50" } }),
            json!({ "amount": { "amount_minor": 1250, "currency": "EUR" }, "note": "cafe\u{301}", "n": 1.0 }),
            json!({ "amount": { "amount": "12.5", "currency": "EUR" }, "note": "café", "n": 1e0 }),
        ] {
            assert_eq!(digest(same.clone()), base, "{same}");
        }
    }

    #[test]
    fn different_calls_never_share_a_digest() {
        let base = json!({ "amount": { "amount": "100.00", "currency": "USD" }, "to": "PAY-1" });
        let digest_of = |arguments: &Value| digest(arguments.clone());
        for other in [
            json!({ "amount": { "amount": "1000.00", "currency": "USD" }, "to": "PAY-1" }),
            json!({ "amount": { "amount": "100.00", "currency": "EUR" }, "to": "PAY-1" }),
            json!({ "amount": { "amount": "100.00", "currency": "USD" }, "to": "PAY-2" }),
            json!({ "amount": { "amount": "100.00", "currency": "USD" }, "to": "PAY-1", "extra": null }),
            json!({ "amount": { "amount": "100.00", "currency": "USD" }, "to": ["PAY-1"] }),
        ] {
            assert_ne!(digest_of(&other), digest_of(&base), "{other}");
        }
        let arguments = base.as_object().unwrap().clone();
        let of = |principal, tool, subject| Transaction { principal, tool, subject, arguments: &arguments }.digest();
        let original = of("p1", "pay_capture", "instance:PAY-1");
        assert_ne!(of("p2", "pay_capture", "instance:PAY-1"), original, "another principal");
        assert_ne!(of("p1", "pay_refund", "instance:PAY-1"), original, "another tool");
        assert_ne!(of("p1", "pay_capture", "instance:PAY-2"), original, "another instance");
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-zé\u{301}]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-d]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn canonical_form_is_idempotent_and_order_blind(value in json_value()) {
            let once = canonical(&value);
            prop_assert_eq!(canonical(&once), once.clone());
            // Reversing every object's key order changes nothing.
            fn reversed(value: &Value) -> Value {
                match value {
                    Value::Object(fields) => Value::Object(fields.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
                    Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
                    other => other.clone(),
                }
            }
            let (mut a, mut b) = (String::new(), String::new());
            write_sorted(&canonical(&value), &mut a);
            write_sorted(&canonical(&reversed(&value)), &mut b);
            prop_assert_eq!(a, b);
        }

        #[test]
        fn different_strings_stay_different(a in "[a-z]{0,8}", b in "[a-z]{0,8}") {
            prop_assume!(a != b);
            prop_assert_ne!(digest(json!({ "to": a })), digest(json!({ "to": b })));
        }
    }
}

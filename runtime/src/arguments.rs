//! A call's arguments checked against the tool's input schema before anything else runs:
//! every bad field at once, each with a JSON pointer, what is wrong, what is expected, an
//! example, and what was received (shortened, and never for a secret-looking field).

use std::sync::Arc;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::error::{FieldError, ToolError};
use crate::types::DateTime;
use crate::types::check::{MARKER, TypeCheck};

/// The longest `got` string shown back.
const GOT_CHARS: usize = 64;

/// Field names whose values are never echoed.
const SECRET_WORDS: &[&str] =
    &["password", "passwd", "secret", "token", "apikey", "api_key", "key", "card", "cvv", "cvc", "pin", "iban", "ssn"];

/// A tool's input schema, compiled once at start-up.
#[derive(Clone)]
pub(crate) struct ArgumentCheck {
    validator: Arc<jsonschema::Validator>,
    schema: Arc<Value>,
}

impl std::fmt::Debug for ArgumentCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgumentCheck")
    }
}

impl ArgumentCheck {
    /// Compiles `schema` (draft 2020-12); a schema that does not compile is a start-up
    /// problem, described.
    pub(crate) fn new(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .with_keyword(MARKER, |parent, marker, _| match TypeCheck::from_marker(marker, parent) {
                Some(check) => Ok(Box::new(TypeKeyword(check))),
                None => Err(jsonschema::ValidationError::custom(format!("unknown `{MARKER}` type {marker}"))),
            })
            .build(&schema)
            .map_err(|error| format!("its input schema does not compile: {error}"))?;
        Ok(Self { validator: Arc::new(validator), schema: Arc::new(schema) })
    }

    /// Whether `instance` passes, without describing why not.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// [`ArgumentCheck::check`] for arguments held as a map (no copy is made).
    pub(crate) fn check_object(&self, arguments: &mut serde_json::Map<String, Value>) -> Result<(), ToolError> {
        let instance = Value::Object(std::mem::take(arguments));
        let checked = self.check(&instance);
        if let Value::Object(map) = instance {
            *arguments = map;
        }
        checked
    }

    /// Every problem with `arguments` (a JSON object), or none.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), ToolError> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut errors: Vec<FieldError> = Vec::new();
        // Where each field's entry is in `errors`: one look-up per field, however many.
        let mut entries: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut typed: std::collections::HashSet<String> = std::collections::HashSet::new();
        for error in self.validator.iter_errors(instance) {
            let at = error.instance_path().as_str().to_string();
            let fields: Vec<(String, String)> = match error.kind() {
                ValidationErrorKind::Required { property } => {
                    let name = property.as_str().unwrap_or_default();
                    vec![(format!("{at}/{}", escape(name)), "is required".to_string())]
                }
                ValidationErrorKind::AdditionalProperties { unexpected }
                | ValidationErrorKind::UnevaluatedProperties { unexpected } => unexpected
                    .iter()
                    .map(|name| (format!("{at}/{}", escape(name)), "is not a parameter of this tool".to_string()))
                    .collect(),
                _ => vec![(at.clone(), self.problem(&error, &at))],
            };
            let from_type = matches!(error.kind(), ValidationErrorKind::Custom { .. });
            if from_type {
                typed.insert(at.clone());
            }
            for (field, problem) in fields {
                if let Some(entry) = entries.get(&field).map(|&at| &mut errors[at]) {
                    // One entry per field: its type's own words if it has a toolgate type,
                    // else its first problem.
                    if from_type {
                        entry.problem = problem;
                    }
                    continue;
                }
                let mut entry = FieldError::new(field.clone(), problem);
                if let Some(property) = self.property_schema(&field) {
                    if let Some(expected) = property.get("description").and_then(Value::as_str) {
                        entry = entry.expected(expected);
                    }
                    if let Some(example) = property.get("examples").and_then(|e| e.get(0)) {
                        entry = entry.example(example.clone());
                    }
                }
                if let Some(got) = instance.pointer(&field).filter(|_| !is_secret(&field)) {
                    entry = entry.got(shortened(got));
                }
                entries.insert(field, errors.len());
                errors.push(entry);
            }
        }
        // A value a toolgate type judged is one field: its parts' errors say less.
        errors.retain(|e| !within_typed(&e.field, &typed));
        if errors.is_empty() { Ok(()) } else { Err(ToolError::invalid_arguments(errors)) }
    }

    /// What is wrong, said for the model: the field's toolgate type's own diagnosis (also
    /// where the type sits in an `anyOf`, as an `Option<Money>` does), a date-time's, else
    /// the validator's.
    fn problem(&self, error: &jsonschema::ValidationError<'_>, at: &str) -> String {
        if let Some(problem) = self.type_check_at(at).and_then(|check| check.problem(error.instance().as_ref())) {
            return problem;
        }
        let is_date_time =
            self.property_schema(at).and_then(|p| p.get("format")).and_then(Value::as_str) == Some("date-time");
        if let (true, Value::String(text)) = (is_date_time, error.instance().as_ref())
            && let Err(problem) = DateTime::parse(text)
        {
            return problem.to_string();
        }
        match error.kind() {
            ValidationErrorKind::Custom { message, .. } => message.clone(),
            ValidationErrorKind::Type { .. } => {
                let message = error.to_string();
                let wanted = message.split_once("is not of type ").map_or("another type", |(_, wanted)| wanted);
                format!("has the wrong type: it must be {wanted}")
            }
            _ => strip_instance(&error.to_string()),
        }
    }

    /// The toolgate type of the value `field` points at, in its schema or one of its
    /// `anyOf`/`oneOf` branches.
    fn type_check_at(&self, field: &str) -> Option<TypeCheck> {
        self.type_check_in(self.property_schema(field)?, 0)
    }

    fn type_check_in(&self, schema: &Value, depth: usize) -> Option<TypeCheck> {
        let schema = self.resolve(schema)?;
        if let Some(marker) = schema.get(MARKER) {
            return TypeCheck::from_marker(marker, schema.as_object()?);
        }
        if depth > 2 {
            return None;
        }
        ["anyOf", "oneOf"]
            .iter()
            .filter_map(|key| schema.get(*key).and_then(Value::as_array))
            .flatten()
            .find_map(|branch| self.type_check_in(branch, depth + 1))
    }

    /// The schema of the value `field` points at (`/departure`, `/items/2/price`), through
    /// `properties` and `items`, `$ref`s followed; `None` where the path leaves plain
    /// objects and arrays (an `anyOf` on the way, say).
    fn property_schema(&self, field: &str) -> Option<&Value> {
        let mut schema = &*self.schema;
        for segment in field.strip_prefix('/')?.split('/') {
            schema = self.resolve(schema)?;
            schema = match schema.get("properties").and_then(|p| p.get(unescape(segment).as_str())) {
                Some(property) => property,
                None if segment.parse::<usize>().is_ok() => schema.get("items")?,
                None => return None,
            };
        }
        self.resolve(schema)
    }

    /// `schema`, or the definition its `$ref` names.
    fn resolve<'a>(&'a self, schema: &'a Value) -> Option<&'a Value> {
        match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(definition) => self.schema.get("$defs")?.get(definition),
            None => Some(schema),
        }
    }
}

/// A toolgate type's own check, run by the validator where the schema carries its marker.
struct TypeKeyword(TypeCheck);

impl<'i> jsonschema::Keyword<'i> for TypeKeyword {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        match self.0.problem(instance) {
            None => Ok(()),
            Some(problem) => Err(jsonschema::ValidationError::custom(problem)),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.0.problem(instance).is_none()
    }
}

/// The validator's message without the offending value it starts with (`got` has it).
/// Whether `field` lies inside a value a toolgate type judged (one of `typed`): each of its
/// ancestors is looked up once.
fn within_typed(field: &str, typed: &std::collections::HashSet<String>) -> bool {
    field.char_indices().filter(|&(_, c)| c == '/').any(|(at, _)| typed.contains(&field[..at]))
}

fn strip_instance(message: &str) -> String {
    message.split_once(" is ").map_or_else(|| message.to_string(), |(_, rest)| format!("is {rest}"))
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn unescape(name: &str) -> String {
    name.replace("~1", "/").replace("~0", "~")
}

fn is_secret(field: &str) -> bool {
    field.split('/').any(|segment| {
        let segment = segment.to_ascii_lowercase();
        SECRET_WORDS.iter().any(|word| segment == *word || segment.contains(word) && word.len() > 3)
    })
}

/// A received value as an error shows it: long strings cut, containers summarized.
pub(crate) fn shortened(value: &Value) -> Value {
    match value {
        Value::String(s) if s.chars().count() > GOT_CHARS => {
            Value::String(format!("{}…", s.chars().take(GOT_CHARS).collect::<String>()))
        }
        Value::Array(items) => Value::String(format!("(an array of {} items)", items.len())),
        Value::Object(_) => Value::String("(an object)".into()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check() -> ArgumentCheck {
        ArgumentCheck::new(json!({
            "type": "object",
            "properties": {
                "departure": { "$ref": "#/$defs/DateTime" },
                "passengers": { "type": "integer", "minimum": 1, "maximum": 9, "description": "Travellers, 1 to 9." },
                "card_number": { "type": "string", "pattern": "^[0-9]{16}$" },
            },
            "required": ["departure", "passengers"],
            "unevaluatedProperties": false,
            "$defs": { "DateTime": {
                "type": "string", "format": "date-time", "pattern": crate::types::date_time_pattern(),
                "description": "RFC 3339 with offset", "examples": ["2026-12-04T08:00:00+01:00"],
            }},
        }))
        .unwrap()
    }

    fn args(value: Value) -> Value {
        value
    }

    /// A thousand unknown members are answered with twenty fields and a count: the reply
    /// does not grow with the request.
    #[test]
    fn an_error_lists_at_most_twenty_fields_and_counts_the_rest() {
        let mut arguments = json!({ "departure": "2026-12-04T08:00:00+01:00", "passengers": 2 });
        for i in 0..1_000 {
            arguments[format!("unknown_{i}")] = json!(i);
        }
        let error = check().check(&arguments).unwrap_err().to_structured();
        assert_eq!(error["errors"].as_array().unwrap().len(), 20, "{error}");
        assert_eq!(error["more_errors"], 980);
        let message = error["message"].as_str().unwrap();
        assert!(message.ends_with("and 980 more"), "{message}");
        assert!(error.to_string().len() < 4_000, "{} bytes", error.to_string().len());
    }

    #[test]
    fn every_bad_field_is_listed_once_with_what_to_do() {
        let error = check()
            .check(&args(
                json!({ "departure": "2026-12-01 10:00", "passengers": "two", "seats": 3, "card_number": "4111" }),
            ))
            .unwrap_err()
            .to_structured();
        let errors = error["errors"].as_array().unwrap();
        let fields: Vec<&str> = errors.iter().map(|e| e["field"].as_str().unwrap()).collect();
        assert_eq!(fields.len(), 4, "{error}");
        for field in ["/departure", "/passengers", "/seats", "/card_number"] {
            assert!(fields.contains(&field), "{field} missing: {error}");
        }
        let departure = errors.iter().find(|e| e["field"] == "/departure").unwrap();
        assert!(departure["problem"].as_str().unwrap().contains("write `T`"), "{departure}");
        assert_eq!(departure["example"], "2026-12-04T08:00:00+01:00");
        assert_eq!(departure["got"], "2026-12-01 10:00");
        let passengers = errors.iter().find(|e| e["field"] == "/passengers").unwrap();
        assert!(passengers["problem"].as_str().unwrap().contains("wrong type"), "{passengers}");
        assert_eq!(passengers["expected"], "Travellers, 1 to 9.");
        let card = errors.iter().find(|e| e["field"] == "/card_number").unwrap();
        assert!(card.get("got").is_none(), "a secret-looking field was echoed: {card}");
        let unknown = errors.iter().find(|e| e["field"] == "/seats").unwrap();
        assert_eq!(unknown["problem"], "is not a parameter of this tool");
    }

    #[test]
    fn missing_fields_are_named_and_long_values_shortened() {
        let error = check().check(&args(json!({ "departure": "x".repeat(500) }))).unwrap_err().to_structured();
        let errors = error["errors"].as_array().unwrap();
        assert!(errors.iter().any(|e| e["field"] == "/passengers" && e["problem"] == "is required"), "{error}");
        let got = errors.iter().find(|e| e["field"] == "/departure").unwrap()["got"].as_str().unwrap().to_string();
        assert_eq!(got.chars().count(), GOT_CHARS + 1, "{got}");
    }

    /// A tool input of every toolgate type, with its schema as the server compiles it.
    fn typed_check() -> (ArgumentCheck, Value) {
        use crate::types::{Count, Date, Duration, Money, Persons, TimeZone};
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Booking {
            price: Money,
            guests: Count<Persons, 1, 9>,
            zone: TimeZone,
            check_in: Date,
            stay: Duration,
        }
        let schema = schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<Booking>()
            .to_value();
        (ArgumentCheck::new(schema.clone()).unwrap(), schema)
    }

    #[test]
    fn every_typed_field_is_judged_in_its_type_s_words_at_once() {
        let (check, _) = typed_check();
        let good = json!({
            "price": {"amount": "12.50", "currency": "EUR"}, "guests": 2, "zone": "Europe/Madrid",
            "check_in": "2026-12-04", "stay": "P3D",
        });
        assert!(check.check(&good).is_ok());
        let bad = json!({
            "price": {"amount": "12.505", "currency": "EUR"}, "guests": "two", "zone": "europe/madrid",
            "check_in": "04/12/2026", "stay": "P1M",
        });
        let Err(error) = check.check(&bad) else { panic!("refused") };
        let errors = error.field_errors();
        let problems: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.problem.as_str())).collect();
        assert_eq!(
            problems,
            [
                ("/price", "has 3 decimal places, but EUR has 2"),
                ("/guests", "must be a whole number of persons, from 1 to 9, e.g. 1"),
                ("/zone", "is written `Europe/Madrid` in the IANA time zone database"),
                ("/check_in", "is a regional format: write YYYY-MM-DD, year first, e.g. `2026-12-04`"),
                ("/stay", "has years or months, whose length varies: give days (`P30D`) or hours instead"),
            ],
        );
    }

    #[test]
    fn a_currency_the_pattern_admits_is_still_checked() {
        let (check, _) = typed_check();
        let args = json!({
            "price": {"amount": "1", "currency": "EUX"}, "guests": 2, "zone": "UTC",
            "check_in": "2026-12-04", "stay": "PT1H",
        });
        let Err(error) = check.check(&args) else { panic!("refused") };
        let errors = error.field_errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "/price");
        assert!(errors[0].problem.contains("not an ISO 4217 code"), "{}", errors[0].problem);
    }

    #[test]
    fn an_optional_typed_field_is_judged_in_its_type_s_words() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Refund {
            amount: Option<crate::types::Money>,
        }
        let schema = schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<Refund>()
            .to_value();
        let check = ArgumentCheck::new(schema).unwrap();
        assert!(check.check(&json!({ "amount": null })).is_ok());
        assert!(check.check(&json!({ "amount": { "amount": "1.50", "currency": "EUR" } })).is_ok());
        let Err(error) = check.check(&json!({ "amount": { "amount": 1.5, "currency": "EUR" } })) else {
            panic!("refused")
        };
        let errors = error.field_errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "/amount");
        assert!(errors[0].problem.contains("never a float"), "{}", errors[0].problem);
    }

    #[test]
    fn a_nested_field_is_described_by_its_own_schema() {
        use crate::types::Money;
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Line {
            /// What is sold.
            item: String,
            price: Option<Money>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Order {
            /// The lines, at least one.
            lines: Vec<Line>,
        }
        let schema = schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<Order>()
            .to_value();
        let check = ArgumentCheck::new(schema).unwrap();
        let order = json!({ "lines": [
            { "item": "lamp", "price": { "amount": "1.00", "currency": "EUR" } },
            { "item": 7, "price": { "amount": 1.5, "currency": "EUR" } },
        ]});
        let Err(error) = check.check(&order) else { panic!("refused") };
        let errors = error.field_errors();
        let by_field = |field: &str| errors.iter().find(|e| e.field == field).unwrap_or_else(|| panic!("{errors:?}"));
        assert_eq!(by_field("/lines/1/item").expected.as_deref(), Some("What is sold."));
        assert!(by_field("/lines/1/price").problem.contains("never a float"), "{errors:?}");
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn clients_see_no_marker() {
        let (_, mut schema) = typed_check();
        assert!(schema.to_string().contains(crate::types::check::MARKER));
        crate::types::check::remove_markers(&mut schema);
        assert!(!schema.to_string().contains(crate::types::check::MARKER), "{schema}");
    }

    #[test]
    fn good_arguments_pass() {
        let good = args(json!({ "departure": "2026-12-04T08:00:00+01:00", "passengers": 2 }));
        assert_eq!(check().check(&good), Ok(()));
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    /// Any JSON value, nested a few levels, with keys that sometimes are the schema's own.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            ".{0,40}".prop_map(Value::from),
            "[0-9T:Z+\\-. ]{0,30}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            let key = prop_oneof![Just("departure".to_string()), Just("passengers".to_string()), "[a-z_/~]{0,8}"];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                prop::collection::btree_map(key, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    static CHECK: std::sync::LazyLock<ArgumentCheck> = std::sync::LazyLock::new(|| {
        ArgumentCheck::new(json!({
            "type": "object",
            "properties": {
                "departure": { "type": "string", "format": "date-time", "pattern": crate::types::date_time_pattern() },
                "passengers": { "type": "integer", "minimum": 1, "maximum": 9 },
                "card_token": { "type": "string" },
                "nested": { "type": "object", "properties": { "list": { "type": "array", "items": { "type": "integer" } } } },
            },
            "required": ["departure", "passengers"],
            "unevaluatedProperties": false,
        }))
        .unwrap()
    });

    proptest! {
        // The case count is stated in BENCHMARKS.md ("Fuzzing").
        #![proptest_config(ProptestConfig::with_cases(5_000))]

        /// Whatever arrives as arguments, the check answers without panicking, and every
        /// error it lists names a field by JSON pointer.
        #[test]
        fn any_arguments_get_an_answer_never_a_panic(arguments in prop::collection::btree_map("[a-z_]{0,12}", any_json(), 0..8)) {
            let arguments = Value::Object(arguments.into_iter().collect::<Map<String, Value>>());
            if let Err(error) = CHECK.check(&arguments) {
                let value = error.to_structured();
                for entry in value["errors"].as_array().unwrap() {
                    prop_assert!(entry["field"].as_str().unwrap().starts_with('/'), "{value}");
                }
            }
        }
    }
}

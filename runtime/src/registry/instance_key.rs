//! The argument that names a keyed machine's instance (`id` of `invoice_discharge`):
//! found in the tool's input schema at start-up, read from each call's arguments, checked
//! against its own schema (a `pattern`, say) and canonicalized before it names an
//! instance, so that each object has exactly one spelling.

use std::fmt;
use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::arguments::{ArgumentCheck, shortened};
use crate::error::{FieldError, ToolError};

/// The longest instance key accepted, in bytes: ids, not documents.
const MAX_KEY_BYTES: usize = 256;

/// A function that gives an instance key its one canonical spelling, or says why the
/// value names no object (see `ServerBuilder::canonical_key`).
pub(crate) type Canonicalize = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// The canonical spellings a server gives keyed machines' keys, by machine id.
#[derive(Clone, Default)]
pub(crate) struct CanonicalKeys(pub(crate) std::collections::BTreeMap<String, Canonicalize>);

impl fmt::Debug for CanonicalKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// How a tool names the instance it acts on.
#[derive(Clone)]
pub(crate) struct InstanceKey {
    /// The argument (the machine's `key`).
    pub(crate) field: String,
    /// Whether the argument is an integer (else a string).
    pub(crate) integer: bool,
    /// The key property's own constraints (`pattern`, `format`, a toolgate type), when it
    /// has any beyond its type: checked before the key names an instance — on the value
    /// alone, then (to describe a failure) as the one field of an object.
    check: Option<(ArgumentCheck, ArgumentCheck)>,
    /// The server's canonical spelling of the machine's keys, if it set one.
    canonicalize: Option<Canonicalize>,
}

impl fmt::Debug for InstanceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstanceKey")
            .field("field", &self.field)
            .field("integer", &self.integer)
            .finish_non_exhaustive()
    }
}

/// Schema keywords that constrain a key beyond its type.
const CONSTRAINTS: [&str; 8] = ["pattern", "format", "enum", "const", "minLength", "maxLength", "minimum", "maximum"];

impl InstanceKey {
    /// Finds `field` in an input schema: it must be a required string or integer property.
    /// `Ok(None)`: the input has no such property.
    pub(crate) fn find(
        schema: &JsonObject,
        field: &str,
        canonicalize: Option<Canonicalize>,
    ) -> Result<Option<Self>, String> {
        let Some(property) = schema.get("properties").and_then(|p| p.get(field)) else { return Ok(None) };
        let resolved = resolve(schema, property);
        let required = schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|f| f == field));
        let integer = match resolved.get("type").and_then(Value::as_str) {
            Some("string") => false,
            Some("integer") => true,
            _ => return Err(format!("its `{field}` field is {}", describe(resolved))),
        };
        if !required {
            return Err(format!("its `{field}` field is optional"));
        }
        let constrained = resolved
            .as_object()
            .is_some_and(|p| p.keys().any(|k| CONSTRAINTS.contains(&k.as_str()) || k == crate::types::check::MARKER));
        let check = if constrained {
            let mut value = property.clone();
            let mut wrapped = json!({ "type": "object", "properties": { field: property } });
            if let Some(definitions) = schema.get("$defs") {
                value["$defs"] = definitions.clone();
                wrapped["$defs"] = definitions.clone();
            }
            Some((ArgumentCheck::new(value)?, ArgumentCheck::new(wrapped)?))
        } else {
            None
        };
        let canonicalize = canonicalize.filter(|_| !integer);
        Ok(Some(Self { field: field.to_string(), integer, check, canonicalize }))
    }

    /// The instance a call names: the argument's value as text, checked against the key's
    /// own schema and canonicalized (the argument then holds the canonical spelling too,
    /// so the handler and the instance agree). A missing, mistyped, malformed or oversized
    /// value is `INVALID_ARGUMENT` before any state is read; no other argument is read.
    pub(crate) fn read(&self, arguments: &mut Map<String, Value>) -> Result<String, ToolError> {
        let field = self.field.as_str();
        let expected = if self.integer { "an integer id" } else { "a non-empty string id" };
        let problem = match (arguments.get(field), self.integer) {
            (Some(Value::String(s)), false) if !s.is_empty() && s.len() <= MAX_KEY_BYTES => {
                return self.canonical(arguments);
            }
            (Some(Value::Number(n)), true) if n.is_i64() || n.is_u64() => return Ok(n.to_string()),
            (None, _) => "is required: it names the object this call acts on",
            (Some(Value::String(s)), false) if s.is_empty() => "must not be empty",
            (Some(Value::String(_)), false) => "is too long for an id",
            _ => "has the wrong type",
        };
        let mut error = FieldError::new(format!("/{field}"), problem).expected(expected);
        if let Some(got) = arguments.get(field) {
            error = error.got(shortened(got));
        }
        Err(ToolError::invalid_arguments([error]))
    }

    /// A string key checked against its schema, then in its canonical spelling.
    fn canonical(&self, arguments: &mut Map<String, Value>) -> Result<String, ToolError> {
        let field = self.field.as_str();
        let Some(Value::String(raw)) = arguments.get(field) else {
            return Err(ToolError::internal("the key vanished"));
        };
        if let Some((value, wrapped)) = &self.check
            && !value.is_valid(&arguments[field])
        {
            let mut alone = Map::new();
            alone.insert(field.to_string(), Value::String(raw.clone()));
            wrapped.check(&Value::Object(alone))?;
        }
        let Some(canonicalize) = &self.canonicalize else { return Ok(raw.clone()) };
        match canonicalize(raw) {
            Ok(canonical) if canonical == *raw => Ok(canonical),
            Ok(canonical) if !canonical.is_empty() && canonical.len() <= MAX_KEY_BYTES => {
                arguments.insert(field.to_string(), Value::String(canonical.clone()));
                Ok(canonical)
            }
            Ok(_) => {
                Err(ToolError::internal(format_args!("the canonical form of `{field}` {raw:?} is empty or too long")))
            }
            Err(problem) => {
                let error = FieldError::new(format!("/{field}"), problem).got(shortened(&Value::String(raw.clone())));
                Err(ToolError::invalid_arguments([error]))
            }
        }
    }
}

/// Follows a local `$ref` (`#/$defs/InvoiceId`) to its definition.
fn resolve<'a>(schema: &'a JsonObject, property: &'a Value) -> &'a Value {
    property
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| schema.get("$defs")?.get(name))
        .unwrap_or(property)
}

fn describe(property: &Value) -> String {
    match property.get("type") {
        Some(kind) => format!("of type {kind}, not a string or an integer"),
        None => "not a plain string or integer".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn finds_required_string_and_integer_keys() {
        let s = schema(json!({"properties": {"id": {"type": "string"}}, "required": ["id"]}));
        assert_eq!(
            InstanceKey::find(&s, "id", None).unwrap().map(|k| (k.field, k.integer)),
            Some(("id".into(), false))
        );
        let s = schema(json!({
            "properties": {"id": {"$ref": "#/$defs/Id"}}, "required": ["id"],
            "$defs": {"Id": {"type": "integer", "format": "int64"}}
        }));
        assert!(InstanceKey::find(&s, "id", None).unwrap().unwrap().integer);
        assert_eq!(InstanceKey::find(&schema(json!({"properties": {}})), "id", None).unwrap().map(|k| k.field), None);
    }

    #[test]
    fn refuses_optional_and_other_types() {
        let s = schema(json!({"properties": {"id": {"type": "string"}}}));
        assert_eq!(InstanceKey::find(&s, "id", None).unwrap_err(), "its `id` field is optional");
        let s = schema(json!({"properties": {"id": {"type": ["string", "null"]}}, "required": ["id"]}));
        assert!(InstanceKey::find(&s, "id", None).unwrap_err().contains("not a string or an integer"));
    }

    #[test]
    fn reads_the_instance_or_says_what_is_wrong() {
        let key = InstanceKey::find(
            &schema(json!({"properties": {"id": {"type": "string"}}, "required": ["id"]})),
            "id",
            None,
        )
        .unwrap()
        .unwrap();
        let args = |v: Value| v.as_object().cloned().unwrap();
        let key_read = |key: &InstanceKey, mut a: Map<String, Value>| key.read(&mut a);
        assert_eq!(key_read(&key, args(json!({"id": "INV-1"}))), Ok("INV-1".into()));
        for (bad, problem) in [
            (json!({}), "is required"),
            (json!({"id": ""}), "must not be empty"),
            (json!({"id": 7}), "has the wrong type"),
            (json!({"id": "x".repeat(300)}), "is too long"),
        ] {
            let error = key_read(&key, args(bad)).unwrap_err().to_structured();
            assert!(error["errors"][0]["problem"].as_str().unwrap().starts_with(problem), "{error}");
        }
        let key =
            InstanceKey::find(&schema(json!({"properties": {"n": {"type": "integer"}}, "required": ["n"]})), "n", None)
                .unwrap()
                .unwrap();
        assert_eq!(key_read(&key, args(json!({"n": 42}))), Ok("42".into()));
        assert!(key_read(&key, args(json!({"n": 4.5}))).is_err());
    }

    #[test]
    fn a_key_has_one_spelling() {
        let s = schema(json!({
            "properties": {"id": {"type": "string", "pattern": "^INV-[1-9][0-9]*$"}}, "required": ["id"]
        }));
        let upper: Canonicalize = Arc::new(|raw: &str| Ok(raw.to_ascii_uppercase()));
        let key = InstanceKey::find(&s, "id", Some(upper)).unwrap().unwrap();
        let mut arguments = json!({"id": "INV-7", "note": 1}).as_object().cloned().unwrap();
        assert_eq!(key.read(&mut arguments), Ok("INV-7".into()));
        for bad in ["INV-01", "INV-+1", "INV-1 ", "inv-1"] {
            let mut arguments = json!({"id": bad}).as_object().cloned().unwrap();
            let error = key.read(&mut arguments).unwrap_err().to_structured();
            assert_eq!(error["errors"][0]["field"], "/id", "{bad}: {error}");
        }
        let lenient = schema(json!({"properties": {"id": {"type": "string"}}, "required": ["id"]}));
        let upper: Canonicalize = Arc::new(|raw: &str| Ok(raw.trim().to_ascii_uppercase()));
        let key = InstanceKey::find(&lenient, "id", Some(upper)).unwrap().unwrap();
        let mut arguments = json!({"id": " inv-7"}).as_object().cloned().unwrap();
        assert_eq!(key.read(&mut arguments), Ok("INV-7".into()));
        assert_eq!(arguments["id"], "INV-7", "the handler sees the canonical spelling");
        let refuse: Canonicalize = Arc::new(|_: &str| Err("is not an invoice number".into()));
        let key = InstanceKey::find(&lenient, "id", Some(refuse)).unwrap().unwrap();
        let mut arguments = json!({"id": "x"}).as_object().cloned().unwrap();
        let error = key.read(&mut arguments).unwrap_err().to_structured();
        assert_eq!(error["errors"][0]["problem"], "is not an invoice number");
    }
}

//! `switch_domain`: the one explicit way to move a flow to another intent domain.

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value, json};

use super::IntentLock;
use crate::error::{FieldError, ToolError};

pub(crate) use super::lock::SWITCH_DOMAIN;

/// A parsed `switch_domain` call.
pub(crate) struct SwitchRequest {
    pub(crate) domain: String,
    pub(crate) reason: String,
}

impl IntentLock {
    /// The MCP definition of `switch_domain`, listing every domain with its description.
    pub(crate) fn switch_tool(&self) -> Tool {
        let names: Vec<&str> = self.domains.keys().map(String::as_str).collect();
        let mut description = String::from(
            "Change the intent domain of this conversation. Call it only when the user's intent has changed to another domain; every other tool works only in the active domain. Domains:",
        );
        for (name, about) in &self.domains {
            match about {
                Some(about) => description.push_str(&format!("\n- {name}: {about}")),
                None => description.push_str(&format!("\n- {name}")),
            }
        }
        let input = json!({
            "type": "object",
            "properties": {
                "domain": { "type": "string", "enum": names, "description": "The domain the user now wants." },
                "reason": { "type": "string", "minLength": 1, "description": "What the user said that changed the intent." },
            },
            "required": ["domain", "reason"],
        });
        let output = json!({
            "type": "object",
            "properties": {
                "domain": { "type": "string", "enum": names, "description": "The active domain now." },
                "previous_domain": { "type": ["string", "null"], "description": "The domain that was active before." },
                "next": { "type": "array", "items": { "type": "string" }, "description": "The tools callable now." },
            },
            "required": ["domain", "previous_domain", "next"],
        });
        let mut tool = Tool::new(SWITCH_DOMAIN, description, object(input));
        tool.output_schema = Some(object(output).into());
        tool
    }

    /// Reads and checks `switch_domain`'s arguments.
    pub(crate) fn parse_switch(&self, arguments: &Map<String, Value>) -> Result<SwitchRequest, ToolError> {
        let names: Vec<&str> = self.domains.keys().map(String::as_str).collect();
        let mut errors = Vec::new();
        let domain = match arguments.get("domain") {
            Some(Value::String(d)) if self.domains.contains_key(d) => Some(d.clone()),
            other => {
                let problem = if other.is_none() { "is required" } else { "is not a domain of this server" };
                let error = FieldError::new("/domain", problem)
                    .expected(format!("one of: {}", names.join(", ")))
                    .example(names.first().copied().unwrap_or_default());
                errors.push(match other {
                    Some(got) => error.got(got.clone()),
                    None => error,
                });
                None
            }
        };
        let reason = match arguments.get("reason") {
            Some(Value::String(r)) if !r.trim().is_empty() => Some(r.clone()),
            _ => {
                errors.push(
                    FieldError::new("/reason", "is required: say what the user asked for that changed the intent")
                        .example("the user now wants a rental car instead of a bus"),
                );
                None
            }
        };
        match (domain, reason) {
            (Some(domain), Some(reason)) => Ok(SwitchRequest { domain, reason }),
            _ => Err(ToolError::invalid_arguments(errors)),
        }
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

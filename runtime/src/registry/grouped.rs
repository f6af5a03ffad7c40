//! Grouped exposition: one MCP tool per domain (`invoice`) instead of one per action
//! (`invoice_submit`), its `action` argument naming the action and each action's
//! arguments a `oneOf` branch keyed by `action`'s `const`, with the action's description.
//!
//! Only what the model sees changes. A grouped call is resolved here to its action's tool
//! and goes through the same pipeline as the flat call, and its reply names actions where
//! the flat reply names tools. A grouped definition is composed from the actions a listing
//! shows: on a session, those the state allows (the step leaves the menu); at MCP
//! 2026-07-28, every action the caller may see.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value, json};

use super::ToolEntry;
use crate::domain::field::DOMAIN_FIELD;
use crate::error::{FieldError, ToolError};

/// How a server shows its tools to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Exposition {
    /// One tool per action (`invoice_submit`). The default.
    #[default]
    Flat,
    /// One tool per domain (`invoice`), with an `action` argument (`"submit"`): fewer
    /// tools, and fewer tokens on every turn. Each action is judged exactly as its flat
    /// tool; global tools and `switch_domain` stay as they are.
    Grouped,
}

/// The argument that names the action of a grouped call.
pub(crate) const ACTION_FIELD: &str = "action";

/// Every domain's group, built once at start-up whatever the exposition (`describe`
/// compares both).
#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<&'static str, Group>,
    /// A domain tool's name → its domain and action.
    actions: HashMap<&'static str, (&'static str, String)>,
}

/// One domain's tool.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) domain: &'static str,
    description: String,
    /// In the tools' (name) order.
    actions: Vec<Action>,
}

/// One action of a group: its flat tool's schemas, as a branch.
#[derive(Debug)]
struct Action {
    name: String,
    tool: &'static str,
    /// The input branch: the flat input without `domain`, its `$defs` apart.
    input: JsonObject,
    input_defs: JsonObject,
    /// The success branches of the flat output schema, and its `$defs`; `None` for a tool
    /// without structured output.
    output: Option<(Vec<Value>, JsonObject)>,
}

impl Groups {
    /// The groups of `tools`' domain tools; `descriptions` are the domains' own.
    pub(crate) fn new(tools: &[ToolEntry], descriptions: &BTreeMap<String, Option<String>>) -> Self {
        let mut groups: BTreeMap<&'static str, Group> = BTreeMap::new();
        let mut actions = HashMap::new();
        for tool in tools {
            let Some(domain) = tool.domain else { continue };
            let group = groups.entry(domain).or_insert_with(|| Group {
                domain,
                description: group_description(domain, descriptions.get(domain).cloned().flatten()),
                actions: Vec::new(),
            });
            let short = tool.name.strip_prefix(domain).and_then(|rest| rest.strip_prefix('_')).unwrap_or(tool.name);
            let name = match group.actions.iter().any(|a| a.name == short) {
                true => tool.name.to_string(),
                false => short.to_string(),
            };
            let action = Action::new(name.clone(), tool);
            actions.insert(tool.name, (domain, name));
            group.actions.push(action);
        }
        Self { groups, actions }
    }

    /// The group named `name` (a domain).
    pub(crate) fn get(&self, name: &str) -> Option<&Group> {
        self.groups.get(name)
    }

    /// Every group, by name.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Group> + '_ {
        self.groups.values()
    }

    /// `tools` (flat definitions a listing shows) as grouped definitions: each domain's
    /// tools become its group's, with their actions; global tools stay.
    pub(crate) fn expose(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let mut shown: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut exposed = Vec::new();
        for tool in &tools {
            match self.actions.get(tool.name.as_ref()) {
                Some((domain, _)) => shown.entry(domain).or_default().push(self.tool_name(tool.name.as_ref())),
                None => exposed.push(tool.clone()),
            }
        }
        for (domain, tools) in shown {
            if let Some(group) = self.groups.get(domain) {
                exposed.push(group.definition(|action| tools.contains(&action.tool)));
            }
        }
        exposed.sort_by(|a, b| a.name.cmp(&b.name));
        exposed
    }

    /// A flat tool's `&'static` name.
    fn tool_name(&self, name: &str) -> &'static str {
        self.actions.get_key_value(name).map_or("", |(tool, _)| tool)
    }

    /// A reply's tool names as actions, from a call to a tool of `domain` (`None`: a global
    /// tool): an action of the same domain by its name (`submit`), another domain's as
    /// `domain.action`; global tools keep theirs.
    pub(crate) fn regroup(&self, content: &mut Value, domain: Option<&str>) {
        let Value::Object(fields) = content else { return };
        let rename = |name: &str| -> Option<String> {
            let (group, action) = self.actions.get(name)?;
            Some(if Some(*group) == domain { action.clone() } else { format!("{group}.{action}") })
        };
        for field in ["tool", "task_tool"] {
            if let Some(Value::String(name)) = fields.get_mut(field)
                && let Some(renamed) = rename(name)
            {
                *name = renamed;
            }
        }
        for field in ["next", "allowed_tools", "unlocked_by"] {
            if let Some(Value::Array(names)) = fields.get_mut(field) {
                for name in names.iter_mut() {
                    if let Some(renamed) = name.as_str().and_then(rename) {
                        *name = renamed.into();
                    }
                }
            }
        }
        if let Some(Value::Object(by_domain)) = fields.get_mut("next_after_switch") {
            for names in by_domain.values_mut().filter_map(Value::as_array_mut) {
                for name in names.iter_mut() {
                    if let Some(renamed) = name.as_str().and_then(rename) {
                        *name = renamed.into();
                    }
                }
            }
        }
        for field in ["message", "hint"] {
            if let Some(Value::String(text)) = fields.get_mut(field)
                && text.contains('`')
            {
                for tool in self.actions.keys() {
                    let quoted = format!("`{tool}`");
                    if text.contains(&quoted)
                        && let Some(renamed) = rename(tool)
                    {
                        *text = text.replace(&quoted, &format!("`{renamed}`"));
                    }
                }
            }
        }
    }
}

impl Group {
    /// Resolves a grouped call: its `action` names the tool it runs as, and the arguments
    /// become that tool's (without `action`, with the group's `domain`). A refusal names
    /// the actions whose tools the caller `sees`.
    pub(crate) fn resolve(
        &self,
        arguments: &mut Map<String, Value>,
        sees: impl Fn(&str) -> bool,
    ) -> Result<&'static str, ToolError> {
        let names: Vec<&str> = self.actions.iter().filter(|a| sees(a.tool)).map(|a| a.name.as_str()).collect();
        let wrong = |problem: &str, got: Option<Value>| {
            let error = FieldError::new(format!("/{ACTION_FIELD}"), problem)
                .expected(format!("one of {}", names.join(", ")))
                .example(names.first().copied().unwrap_or_default());
            ToolError::invalid_arguments([match got {
                Some(got) => error.got(got),
                None => error,
            }])
        };
        let action = match arguments.shift_remove(ACTION_FIELD) {
            None => return Err(wrong("is required: the action to run", None)),
            Some(Value::String(name)) => name,
            Some(other) => return Err(wrong("must be a string", Some(other))),
        };
        let Some(found) = self.actions.iter().find(|a| a.name == action) else {
            return Err(wrong(&format!("`{action}` is not an action of `{}`", self.domain), Some(action.into())));
        };
        arguments.insert(DOMAIN_FIELD.into(), self.domain.into());
        Ok(found.tool)
    }

    /// How many actions it has.
    pub(crate) fn len(&self) -> usize {
        self.actions.len()
    }

    /// The flat tools its actions run as.
    pub(crate) fn tools(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.actions.iter().map(|action| action.tool)
    }

    /// The definition with every action.
    pub(crate) fn full_definition(&self) -> Tool {
        self.definition(|_| true)
    }

    /// The definition with the actions `shown` keeps.
    fn definition(&self, shown: impl Fn(&Action) -> bool) -> Tool {
        let actions: Vec<&Action> = self.actions.iter().filter(|a| shown(a)).collect();
        let mut defs = JsonObject::new();
        let mut branches: Vec<JsonObject> =
            actions.iter().map(|a| with_defs_merged(&a.input, &a.input_defs, &a.name, &mut defs)).collect();
        let mut properties = JsonObject::new();
        let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
        properties.insert(ACTION_FIELD.into(), json!({ "type": "string", "enum": names }));
        let mut required = vec![Value::from(ACTION_FIELD)];
        hoist_common(&mut branches, &mut properties, &mut required);
        let mut input = JsonObject::new();
        input.insert("type".into(), "object".into());
        input.insert("properties".into(), properties.into());
        input.insert("required".into(), required.into());
        input.insert("oneOf".into(), branches.into_iter().map(Value::Object).collect());
        if !defs.is_empty() {
            input.insert("$defs".into(), defs.into());
        }
        let mut tool = Tool::new(self.domain, self.description.clone(), Arc::new(input));
        tool.output_schema = self.output_schema(&actions).map(Arc::new);
        tool
    }

    /// Every action's success shape, once each, then the error shape; none if an action
    /// has no structured output.
    fn output_schema(&self, actions: &[&Action]) -> Option<JsonObject> {
        let mut defs = JsonObject::new();
        let mut shapes: Vec<Value> = Vec::new();
        for action in actions {
            let (successes, action_defs) = action.output.as_ref()?;
            for success in successes {
                let Value::Object(success) = success else { continue };
                let merged = Value::Object(with_defs_merged(success, action_defs, &action.name, &mut defs));
                if !shapes.contains(&merged) {
                    shapes.push(merged);
                }
            }
        }
        shapes.push(crate::schema::error_shape());
        let mut schema = JsonObject::new();
        schema.insert("$schema".into(), "https://json-schema.org/draft/2020-12/schema".into());
        schema.insert("type".into(), "object".into());
        if !defs.is_empty() {
            schema.insert("$defs".into(), defs.into());
        }
        schema.insert("anyOf".into(), shapes.into());
        Some(schema)
    }
}

impl Action {
    fn new(name: String, tool: &ToolEntry) -> Self {
        let mut input = (*tool.tool.input_schema).clone();
        let input_defs = take_defs(&mut input);
        // A branch is no schema resource of its own, where 2020-12 allows a `$schema`.
        input.shift_remove("$schema");
        if let Some(Value::Object(properties)) = input.get_mut("properties") {
            properties.shift_remove(DOMAIN_FIELD);
        }
        if let Some(Value::Array(required)) = input.get_mut("required") {
            required.retain(|r| r != DOMAIN_FIELD);
        }
        input.shift_remove("type");
        // The action's description replaces the input type's.
        input.insert("description".into(), tool.tool.description.as_deref().unwrap_or_default().into());
        let mut properties = JsonObject::new();
        properties.insert(ACTION_FIELD.into(), json!({ "const": name }));
        if let Some(Value::Object(rest)) = input.shift_remove("properties") {
            properties.extend(rest);
        }
        input.insert("properties".into(), properties.into());
        let output = tool.tool.output_schema.as_deref().map(|schema| {
            let mut schema = schema.clone();
            let defs = take_defs(&mut schema);
            let mut shapes = match schema.shift_remove("anyOf") {
                Some(Value::Array(shapes)) => shapes,
                _ => vec![Value::Object(schema)],
            };
            // The last shape is the error's, which the group states once.
            if shapes.last() == Some(&crate::schema::error_shape()) {
                shapes.pop();
            }
            (shapes, defs)
        });
        Self { name, tool: tool.name, input, input_defs, output }
    }
}

fn take_defs(schema: &mut JsonObject) -> JsonObject {
    match schema.shift_remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => JsonObject::new(),
    }
}

/// `branch` with its `$defs` merged into `defs`: a definition another branch already put
/// there under the same name, different, is renamed `action.Name` here (and its `$ref`s).
fn with_defs_merged(branch: &JsonObject, own: &JsonObject, action: &str, defs: &mut JsonObject) -> JsonObject {
    let mut branch = Value::Object(branch.clone());
    for (name, schema) in own {
        match defs.get(name) {
            None => {
                defs.insert(name.clone(), schema.clone());
            }
            Some(existing) if existing == schema => {}
            Some(_) => {
                let renamed = format!("{action}.{name}");
                rename_ref(&mut branch, &format!("#/$defs/{name}"), &format!("#/$defs/{renamed}"));
                defs.insert(renamed, schema.clone());
            }
        }
    }
    match branch {
        Value::Object(branch) => branch,
        _ => JsonObject::new(),
    }
}

fn rename_ref(schema: &mut Value, from: &str, to: &str) {
    match schema {
        Value::Object(fields) => {
            for (key, value) in fields.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" && reference == from => *reference = to.to_string(),
                    _ => rename_ref(value, from, to),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rename_ref(item, from, to)),
        _ => {}
    }
}

/// Moves a property every branch has, the same in each, to the tool's own `properties`
/// (and to its `required` where every branch requires it): said once, not per action.
fn hoist_common(branches: &mut [JsonObject], properties: &mut JsonObject, required: &mut Vec<Value>) {
    let Some((first, rest)) = branches.split_first() else { return };
    let Some(Value::Object(candidates)) = first.get("properties") else { return };
    let property_of = |branch: &JsonObject, name: &str| branch.get("properties").and_then(|p| p.get(name)).cloned();
    let requires = |branch: &JsonObject, name: &str| {
        branch.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|n| n == name))
    };
    let common: Vec<(String, Value)> = candidates
        .iter()
        .filter(|(name, _)| name.as_str() != ACTION_FIELD)
        .filter(|(name, schema)| rest.iter().all(|b| property_of(b, name).as_ref() == Some(*schema)))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    for (name, schema) in common {
        let everywhere = branches.iter().all(|b| requires(b, &name));
        for branch in branches.iter_mut() {
            if let Some(Value::Object(own)) = branch.get_mut("properties") {
                own.shift_remove(&name);
            }
            if everywhere && let Some(Value::Array(own)) = branch.get_mut("required") {
                own.retain(|n| n != name.as_str());
            }
        }
        properties.insert(name.clone(), schema);
        if everywhere {
            required.push(name.into());
        }
    }
    for branch in branches.iter_mut() {
        if branch.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            branch.shift_remove("required");
        }
    }
}

/// The group's description: the domain's own, and how to call it.
fn group_description(domain: &str, described: Option<String>) -> String {
    let what = described.unwrap_or_else(|| format!("The `{domain}` actions"));
    format!("{}. Pick an `action`; each takes its own arguments.", what.trim_end_matches('.'))
}

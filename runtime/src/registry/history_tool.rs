//! The opt-in history tool of a keyed machine (`ServerBuilder::history_tool("invoice")`):
//! `invoice_history {id}` answers with the instance's transitions, oldest first, each with
//! a one-line summary a model can quote ("why can't I pay INV-7?" — "`carol` called
//! `invoice_reject` (REJECT) … : amount mismatch").
//!
//! It is an action like any other, so it goes through the whole admission pipeline: it
//! takes the machine's key argument with the key's own schema and canonical spelling
//! (step 5), names the instance in the caller's tenant for a tenant-scoped machine (so
//! another tenant reads an empty history, exactly as for an id nobody moved), and takes
//! the `domain` of the machine's tools under an intent lock. It fires no transition and
//! writes nothing but what any call of its domain may (a domain selected on first use).
//!
//! **Who sees it:** a principal that may see at least one tool of the machine — holding
//! every scope of one of them. A machine with a tool anyone may see has a history anyone
//! may read (of their own tenant's instances); one whose every tool is scoped shows its
//! history only to principals that hold one of those tools' scopes.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::startup_error::StartupProblem;
use super::tool_entry::{Context, ToolEntry, ToolKind};
use super::tool_schemas::{add_machine_fields, object};
use crate::action::{ActionRegistration, Arguments, Called, Ctx, Handler, Output, SourceLocation};
use crate::arguments::ArgumentCheck;
use crate::domain::field;
use crate::flow::field as flow_field;
use crate::fsm::Machine;
use crate::schema::{admit_errors, keep_standard_formats};
use crate::store::{HistoryEntry, HistoryRetention};

/// What a server keeps of its instances' histories, and which machines offer a history tool.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistoryOptions {
    /// How much of each instance's history the store keeps.
    pub(crate) retention: HistoryRetention,
    /// The keyed machines whose history tool the server offers.
    pub(crate) machines: Vec<String>,
    /// The keyed machines whose entries keep the instance's data.
    pub(crate) with_data: Vec<String>,
}

/// The result field that holds the entries.
const ENTRIES_FIELD: &str = "entries";

/// The field naming the task that holds the instance, while one runs.
const RUNNING_TASK_FIELD: &str = "running_task";

/// The field listing the effects not done: pending, or dead-lettered.
const EFFECTS_FIELD: &str = "effects";

/// Whether `registration` is a history tool's (toolgate's own, not an `#[action]`).
pub(crate) fn is_history_tool(registration: &ActionRegistration) -> bool {
    registration.location.file == file!()
}

/// The history tools `options` asks for, built against the other `tools`; what stands in
/// the way of one becomes a problem.
pub(super) fn history_tools(
    tools: &[ToolEntry],
    options: &HistoryOptions,
    context: &Context,
    problems: &mut Vec<StartupProblem>,
) -> Vec<ToolEntry> {
    let asked: BTreeSet<&str> = options.machines.iter().map(String::as_str).collect();
    asked
        .into_iter()
        .filter_map(|machine| {
            ToolEntry::history(machine, tools, context, options.retention)
                .map_err(|problem| problems.push(StartupProblem::HistoryTool { machine: machine.to_string(), problem }))
                .ok()
        })
        .flatten()
        .collect()
}

impl ToolEntry {
    /// The history tool of the keyed machine `machine`, whose `tools` name its instances.
    fn history(
        machine: &str,
        tools: &[ToolEntry],
        context: &Context,
        retention: HistoryRetention,
    ) -> Result<Vec<Self>, String> {
        let Some(machine) = context.machines.get(machine) else {
            let known: Vec<&str> = context.machines.keys().map(String::as_str).collect();
            return Err(format!("there is no such machine; machines: {}", known.join(", ")));
        };
        let Some(key) = machine.key() else {
            return Err(
                "it is not keyed (`key: \"…\"`): a conversation's machine has no instances to keep the history of"
                    .into(),
            );
        };
        let of_machine: Vec<&ToolEntry> =
            tools.iter().filter(|t| t.machine.as_ref().is_some_and(|m| m.id() == machine.id())).collect();
        let Some(source) = of_machine.iter().find(|t| t.instance.is_some()) else {
            return Err("no tool names its instances".into());
        };
        // A machine whose tools span domains gets one history tool in each: the intent lock
        // judges it as it judges that domain's tools.
        let domains: BTreeSet<Option<&'static str>> = of_machine.iter().map(|t| t.domain).collect();
        let in_domain = |domain: Option<&'static str>| -> Result<Self, String> {
            let of_domain: Vec<&ToolEntry> = of_machine.iter().copied().filter(|t| t.domain == domain).collect();
            let source = of_domain.iter().copied().find(|t| t.instance.is_some()).unwrap_or(source);
            Self::history_in(domain, machine, key, source, &of_domain, tools, context, retention)
        };
        domains.into_iter().map(in_domain).collect()
    }

    /// The history tool of `machine` in `domain`, named and seen as `of_domain`, the
    /// machine's tools there; `source` names its instances.
    #[allow(clippy::too_many_arguments)]
    fn history_in(
        domain: Option<&'static str>,
        machine: &Arc<Machine>,
        key: &str,
        source: &ToolEntry,
        of_domain: &[&ToolEntry],
        tools: &[ToolEntry],
        context: &Context,
        retention: HistoryRetention,
    ) -> Result<Self, String> {
        let name = match domain {
            Some(domain) if domain != machine.id() => format!("{domain}_{}_history", machine.id()),
            _ => format!("{}_history", machine.id()),
        };
        if let Some(taken) = tools.iter().find(|t| t.name == name) {
            let at = match taken.kind {
                ToolKind::Action(action) => format!(" by the action at {}", action.location),
                ToolKind::SwitchDomain => String::new(),
            };
            return Err(format!("its name `{name}` is taken{at}; rename that action"));
        }
        let needs_flow = context.lock.uses_flow();
        let (input, checked) = input_schema(source, key, domain, needs_flow, context)?;
        let output = output_schema(source, key, machine, domain, needs_flow, context)?;
        let arguments = ArgumentCheck::new(checked)?;
        let registration = registration(name, domain, description(machine, key, retention));
        let mut tool = Tool::new(registration.name, registration.description, Arc::new(input));
        tool.output_schema = Some(Arc::new(output));
        Ok(Self {
            name: registration.name,
            domain,
            kind: ToolKind::Action(registration),
            machine: Some(machine.clone()),
            tool,
            compact: None,
            instance: source.instance.clone(),
            creates: false,
            writes_context: false,
            takes_transaction: false,
            needs_flow,
            arguments: Some(arguments),
            unlocked_by: HashMap::new(),
            seen_with: of_domain.iter().map(|t| t.scopes()).collect(),
            wraps_output: false,
        })
    }
}

/// The key property of `source`'s input schema (what a client sees), with the definitions
/// it refers to.
fn key_property(source: &ToolEntry, key: &str) -> Result<(Value, Option<Value>), String> {
    let schema = &source.tool.input_schema;
    let property = schema
        .get("properties")
        .and_then(|p| p.get(key))
        .cloned()
        .ok_or_else(|| format!("`{}` has no `{key}` property", source.name))?;
    let definitions = property.get("$ref").and(schema.get("$defs")).cloned();
    Ok((property, definitions))
}

/// An object schema of the key property alone (and `extra` properties, required too).
fn object_of(source: &ToolEntry, key: &str, extra: &[(&str, Value)]) -> Result<JsonObject, String> {
    let (property, definitions) = key_property(source, key)?;
    let mut properties = serde_json::Map::new();
    properties.insert(key.to_string(), property);
    let mut required = vec![json!(key)];
    for (name, value) in extra {
        properties.insert(name.to_string(), value.clone());
        required.push(json!(name));
    }
    let mut schema = json!({ "type": "object", "properties": properties, "required": required });
    if let Some(definitions) = definitions {
        schema["$defs"] = definitions;
    }
    Ok(object(schema))
}

/// The input schema a client sees, and the one calls are checked against: the machine's
/// key as its tools take it, `domain`, the handle where there is a flow; nothing else.
fn input_schema(
    source: &ToolEntry,
    key: &str,
    domain: Option<&'static str>,
    needs_flow: bool,
    context: &Context,
) -> Result<(JsonObject, Value), String> {
    let mut input = object_of(source, key, &[])?;
    if let Some(domain) = domain {
        field::add_to_input_schema(&mut input, domain)?;
    }
    if needs_flow {
        flow_field::add_to_input_schema(&mut input, context.handle_argument)?;
    }
    let mut checked = Value::Object(input.clone());
    checked["unevaluatedProperties"] = Value::Bool(false);
    // The declared `domain` is the intent lock's to judge, as for every tool.
    if let (Some(property), Some(domain)) = (checked.pointer_mut("/properties/domain"), domain) {
        *property = json!({ "type": "string", "examples": [domain] });
    }
    Ok((input, checked))
}

/// The result: the key, the entries (each with its `summary`), and what toolgate adds to
/// every result of a machine's tool (`domain`, `state`, the handle).
fn output_schema(
    source: &ToolEntry,
    key: &str,
    machine: &Machine,
    domain: Option<&'static str>,
    needs_flow: bool,
    context: &Context,
) -> Result<JsonObject, String> {
    let text = |description: &str| json!({ "type": "string", "description": description });
    let maybe = |description: &str| json!({ "type": ["string", "null"], "description": description });
    let entry = json!({
        "type": "object",
        "properties": {
            "principal": maybe("Who fired it: the subject of the principal that called; `timer` when time did (`after`); null for a caller that did not authenticate."),
            "tenant": maybe("The principal's tenant, if it has one."),
            "from": text("The state the transition left."),
            "to": text("The state it moved to."),
            "event": text("The event it fired."),
            "tool": text("The tool whose call fired it (empty when time did)."),
            "time": { "type": "string", "format": "date-time", "description": "When it was committed (RFC 3339, UTC)." },
            "call_id": text("The call's id, as the server's log has it."),
            "note": maybe("The reason the handler recorded, if it gave one."),
            "summary": text("The entry in one line, to quote."),
        },
        "required": ["principal", "from", "to", "event", "tool", "time", "call_id", "summary"],
    });
    let entries = json!({
        "type": "array",
        "items": entry,
        "description": format!("The `{}`'s transitions, oldest first (most recent last).", machine.id()),
    });
    let mut output = object_of(source, key, &[(ENTRIES_FIELD, entries)])?;
    let running = json!({
        "type": "object",
        "description": format!("The MCP task changing the `{}` right now, if one is: until it ends, every other change is refused with `TASK_RUNNING`.", machine.id()),
        "properties": {
            "task_id": text("The task's id."),
            "tool": text("The tool the task runs."),
            "since": { "type": "string", "format": "date-time", "description": "When the task started (RFC 3339, UTC)." },
        },
        "required": ["task_id", "tool", "since"],
    });
    let effect = json!({
        "type": "object",
        "properties": {
            "effect": text("The effect's name."),
            "key": text("Its idempotency key, the same on every attempt."),
            "status": { "type": "string", "enum": ["pending", "dead"], "description": "`pending`: still to be dispatched, or tried again after a failed attempt; `dead`: out of attempts, it will not be tried again (an operator acts)." },
            "attempts": { "type": "integer", "minimum": 0, "description": "How many attempts were started." },
            "cut_offs": { "type": "integer", "minimum": 0, "description": "How many of them were cut off: the process running them stopped before they ended." },
            "last_error": maybe("Why the last attempt failed or was cut off, if one was; on a `dead` effect, why it will not be tried again (always there)."),
        },
        "required": ["effect", "key", "status", "attempts", "cut_offs"],
    });
    let effects = json!({
        "type": "array",
        "items": effect,
        "description": format!("What the `{}`'s commits caused that has not happened: effects still to be dispatched, and dead-lettered ones. Absent when every effect was dispatched.", machine.id()),
    });
    if let Some(Value::Object(properties)) = output.get_mut("properties") {
        properties.insert(RUNNING_TASK_FIELD.into(), running);
        properties.insert(EFFECTS_FIELD.into(), effects);
    }
    field::add_to_output_schema(&mut output, domain)?;
    add_machine_fields(&mut output, machine, context.cross_domain.contains(machine.id()))?;
    if needs_flow {
        flow_field::add_to_output_schema(&mut output, context.handle_argument)?;
    }
    admit_errors(&mut output);
    let mut output = Value::Object(output);
    keep_standard_formats(&mut output);
    Ok(object(output))
}

fn description(machine: &Machine, key: &str, retention: HistoryRetention) -> String {
    let id = machine.id();
    let mut text = format!(
        "The history of one `{id}`, named by `{key}`: its transitions, oldest first, each with who fired it (the principal), when, with which tool and event, from which state to which, the reason recorded, and a one-line `summary` to quote. Call it to explain why a tool is refused or what happened to the `{id}` (\"why can't I pay it?\") instead of guessing; `running_task` names the task changing it right now, if one is. Does not change anything."
    );
    text.push_str(&match (retention.entries(), retention.age()) {
        (Some(0), _) => " The server keeps no transitions: the history is empty.".to_string(),
        (Some(most), None) => format!(" The server keeps the last {most} transitions of each."),
        (None, Some(age)) => format!(" The server keeps the transitions of the last {}.", in_words(age)),
        (Some(most), Some(age)) => {
            format!(" The server keeps the last {most} transitions of each, from the last {} only.", in_words(age))
        }
        (None, None) => String::new(),
    });
    text.push_str(" An id that never moved has an empty history");
    text.push_str(if machine.is_principal_owned() {
        "; so has another principal's."
    } else if machine.is_tenant_scoped() {
        "; so has another tenant's."
    } else {
        "."
    });
    text
}

/// `age` in the largest whole unit: `30 days`, `2 hours`, `90 seconds`.
fn in_words(age: std::time::Duration) -> String {
    let seconds = age.as_secs();
    let (count, unit) = [(86_400, "day"), (3_600, "hour"), (60, "minute"), (1, "second")]
        .into_iter()
        .find(|(unit, _)| age.subsec_nanos() == 0 && seconds >= *unit && seconds.is_multiple_of(*unit))
        .map_or((age.as_millis() as u64, "millisecond"), |(length, unit)| (seconds / length, unit));
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

/// The registration of a history tool: the handler is the same for every machine (it
/// reads its instance from the call's context), the rest is this tool's. Interned, so
/// that a registration stays `'static` data like an `#[action]`'s without one leaking
/// per server built.
fn registration(name: String, domain: Option<&'static str>, description: String) -> &'static ActionRegistration {
    type Interned = HashMap<(String, Option<&'static str>, String), &'static ActionRegistration>;
    static INTERNED: OnceLock<Mutex<Interned>> = OnceLock::new();
    let mut interned = INTERNED.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    interned.entry((name.clone(), domain, description.clone())).or_insert_with(|| {
        Box::leak(Box::new(ActionRegistration {
            task: crate::action::TaskSupport::Never,
            name: Box::leak(name.into_boxed_str()),
            domain,
            machine: None,
            bind_states: &[],
            transition: None,
            creates: false,
            description: Box::leak(description.into_boxed_str()),
            compact: None,
            not_for: None,
            timeout_ms: None,
            rate_limit: None,
            transactional: false,
            expensive: false,
            confirm: None,
            idempotency_key: None,
            scopes: &[],
            needs_principal: false,
            parameters: &[],
            allow_unknown_fields: false,
            states: &[],
            contexts: &[],
            handler: Handler { input_schema: object_schema, output_schema: object_schema, call },
            location: SourceLocation { file: file!(), line: line!() },
        }))
    })
}

/// The schemas of the entry are built per machine; the handler's own are never read.
fn object_schema() -> schemars::Schema {
    schemars::json_schema!({ "type": "object" })
}

/// The handler: the instance's history, as the call's arguments name it.
fn call(arguments: Arguments, ctx: Ctx) -> Called {
    Box::pin(async move {
        let entries = ctx.history().await?;
        // The arguments are the key alone, checked and in its canonical spelling.
        let mut structured = arguments;
        structured.insert(ENTRIES_FIELD.into(), entries.iter().map(shown).collect());
        // A task at work on it: the instance is busy until it ends.
        let now = ctx.instance_now().await;
        if let Some((task_id, tool, since)) = now.running_task {
            structured.insert(RUNNING_TASK_FIELD.into(), json!({ "task_id": task_id, "tool": tool, "since": since }));
        }
        // What its commits caused that has not happened (yet, or ever: dead-lettered).
        let effects: Vec<Value> = (now.pending_effects.iter().map(|effect| undone(effect, "pending")))
            .chain(now.dead_effects.iter().map(|effect| undone(effect, "dead")))
            .collect();
        if !effects.is_empty() {
            structured.insert(EFFECTS_FIELD.into(), Value::Array(effects));
        }
        Ok(Output { structured: Value::Object(structured), blocks: None })
    })
}

/// An effect not done, as the tool shows it.
fn undone(effect: &crate::store::PendingEffect, status: &str) -> Value {
    json!({
        "effect": effect.name,
        "key": effect.key,
        "status": status,
        "attempts": effect.attempts,
        "cut_offs": effect.cut_offs,
        "last_error": effect.last_error,
    })
}

/// One entry as the tool shows it.
fn shown(entry: &HistoryEntry) -> Value {
    json!({
        "principal": entry.principal,
        "tenant": entry.tenant,
        "from": entry.from,
        "to": entry.to,
        "event": entry.event,
        "tool": entry.tool,
        "time": entry.time,
        "call_id": entry.call_id,
        "note": entry.note,
        "summary": entry.summary(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_their_largest_unit() {
        use std::time::Duration;
        assert_eq!(in_words(Duration::from_secs(30 * 86_400)), "30 days");
        assert_eq!(in_words(Duration::from_secs(3_600)), "1 hour");
        assert_eq!(in_words(Duration::from_secs(90)), "90 seconds");
        assert_eq!(in_words(Duration::from_millis(1_500)), "1500 milliseconds");
    }
}

//! What a server's tools cost a model's context, in tokens (`describe --format cost`):
//! every listed tool is sent to the model on every turn, so its definition is a cost paid
//! again and again. Counted with a real tokenizer, `o200k_base` (GPT-4o's, embedded by
//! `tiktoken-rs`: offline), on what a model is shown — the tool's name, description and
//! input schema, as JSON — with the output schema apart (clients that validate results
//! read it; not every client shows it to the model).
//!
//! For an `#[action]`, `own` is what its author wrote: the name, the doc comment (and
//! `not_for`) and the input type's schema; `added` is what toolgate put around them (the
//! `domain` and handle fields, the "only while …" sentence, the key's canonical form).

use std::fmt::Write;

use serde::Serialize;
use serde_json::{Value, json};

use super::model::Description;
use crate::registry::{Registry, ToolEntry, ToolKind, is_history_tool};

/// Tokens of `text` in `o200k_base`.
pub(crate) fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

fn json_tokens(value: &Value) -> usize {
    tokens(&value.to_string())
}

/// What one tool costs.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCost {
    /// The tool's name.
    pub name: String,
    /// Tokens of what a model is shown: name, description and input schema.
    pub shown: usize,
    /// Tokens of what the action's author wrote (name, doc comment, input type's schema);
    /// `None` for a tool toolgate makes (`switch_domain`, a history tool).
    pub own: Option<usize>,
    /// Tokens of the output schema.
    pub output: usize,
}

impl ToolCost {
    /// Tokens toolgate added to what the author wrote.
    pub fn added(&self) -> Option<usize> {
        self.own.map(|own| self.shown.saturating_sub(own))
    }
}

/// What a list costs: the tools a 2025-11-25 session sees of one machine in one state.
#[derive(Debug, Clone, Serialize)]
pub struct StateCost {
    /// The machine.
    pub machine: String,
    /// The state.
    pub state: String,
    /// How many tools are callable in it.
    pub tools: usize,
    /// Their tokens, as shown.
    pub shown: usize,
    /// The same list's tokens with the tools grouped (a tool per domain).
    pub grouped: usize,
}

/// What one grouped tool (a domain's, `--exposition grouped`) costs with every action.
#[derive(Debug, Clone, Serialize)]
pub struct GroupCost {
    /// The tool's name: the domain.
    pub name: String,
    /// How many actions it has.
    pub actions: usize,
    /// Tokens of what a model is shown: name, description and input schema.
    pub shown: usize,
    /// Tokens of the output schema.
    pub output: usize,
}

/// What a server's tools cost, tool by tool and list by list.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// Every tool, by name.
    pub tools: Vec<ToolCost>,
    /// The tools callable in each state of each machine.
    pub states: Vec<StateCost>,
    /// Every domain's grouped tool, by name.
    pub groups: Vec<GroupCost>,
    /// Tokens of every tool as a grouped 2026-07-28 list shows them: the groups and the
    /// global tools.
    pub grouped_listed: usize,
}

impl Cost {
    /// Counts `registry`'s tools.
    pub fn of(registry: &Registry) -> Self {
        let tools: Vec<ToolCost> = registry.tools().iter().map(tool_cost).collect();
        let shown = |name: &str| tools.iter().find(|t| t.name == name).map_or(0, |t| t.shown);
        // A list of flat tools, as the grouped exposition shows it.
        let grouped = |names: &mut dyn Iterator<Item = &str>| -> usize {
            let flat = names.filter_map(|name| registry.tool(name)).map(|t| t.tool.clone()).collect();
            registry.groups().expose(flat).iter().map(shown_tokens).sum()
        };
        let description = Description::of(registry);
        let states = (description.machines.iter())
            .flat_map(|machine| machine.states.iter().map(move |state| (machine, state)))
            .map(|(machine, state)| StateCost {
                machine: machine.id.clone(),
                state: state.name.clone(),
                tools: state.tools.len(),
                shown: state.tools.iter().map(|tool| shown(&tool.name)).sum(),
                grouped: grouped(&mut state.tools.iter().map(|tool| tool.name.as_str())),
            })
            .collect();
        let groups = (registry.groups().all())
            .map(|group| {
                let tool = group.full_definition();
                let output =
                    tool.output_schema.as_ref().map_or(0, |schema| json_tokens(&Value::Object((**schema).clone())));
                GroupCost { name: group.domain.to_string(), actions: group.len(), shown: shown_tokens(&tool), output }
            })
            .collect();
        let grouped_listed = grouped(&mut registry.tools().iter().map(|t| t.name));
        Self { tools, states, groups, grouped_listed }
    }

    /// Tokens of every tool as shown: a 2026-07-28 list, which holds every tool the
    /// caller's authorization allows.
    pub fn listed(&self) -> usize {
        self.tools.iter().map(|t| t.shown).sum()
    }

    /// The report `describe --format cost` prints.
    pub fn table(&self) -> String {
        let width = self.tools.iter().map(|t| t.name.len()).chain([4]).max().unwrap_or(4);
        let mut out = format!("{:width$}  {:>6}  {:>6}  {:>6}  {:>6}\n", "tool", "shown", "own", "added", "output");
        let dash = |n: Option<usize>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
        for tool in &self.tools {
            let _ = writeln!(
                out,
                "{:width$}  {:>6}  {:>6}  {:>6}  {:>6}",
                tool.name,
                tool.shown,
                dash(tool.own),
                dash(tool.added()),
                tool.output
            );
        }
        let outputs: usize = self.tools.iter().map(|t| t.output).sum();
        let _ = writeln!(
            out,
            "\nevery tool, as a 2026-07-28 list shows them: {} tools, {} tokens (output schemas: {} more)",
            self.tools.len(),
            self.listed(),
            outputs
        );
        if !self.groups.is_empty() {
            let width = self.groups.iter().map(|g| g.name.len()).chain([4]).max().unwrap_or(4);
            let _ = writeln!(out, "\ngrouped (`--exposition grouped`): a tool per domain, an `action` per tool");
            let _ = writeln!(out, "{:width$}  {:>7}  {:>6}  {:>6}", "tool", "actions", "shown", "output");
            for group in &self.groups {
                let _ = writeln!(
                    out,
                    "{:width$}  {:>7}  {:>6}  {:>6}",
                    group.name, group.actions, group.shown, group.output
                );
            }
            let _ = writeln!(
                out,
                "\nevery tool, grouped, as a 2026-07-28 list shows them: {} tokens, {}% of flat",
                self.grouped_listed,
                (self.grouped_listed * 100).checked_div(self.listed()).unwrap_or(0)
            );
        }
        if !self.states.is_empty() {
            out.push_str("\ncallable in each state (what a 2025-11-25 session lists of the machine):\n");
            for state in &self.states {
                let _ = writeln!(
                    out,
                    "  {}.{}: {} tools, {} tokens (grouped: {})",
                    state.machine, state.state, state.tools, state.shown, state.grouped
                );
            }
        }
        out.push_str("\ntokens: o200k_base; shown = name, description and input schema as JSON; own = what the action's author wrote; added = shown - own");
        out
    }
}

/// Tokens of what a model is shown of `tool`: its name, description and input schema.
fn shown_tokens(tool: &rmcp::model::Tool) -> usize {
    json_tokens(&json!({ "name": tool.name, "description": tool.description, "inputSchema": tool.input_schema }))
}

/// What `entry` costs.
pub(crate) fn tool_cost(entry: &ToolEntry) -> ToolCost {
    let tool = &entry.tool;
    let output = tool.output_schema.as_ref().map_or(0, |schema| json_tokens(&Value::Object((**schema).clone())));
    let own = match entry.kind {
        ToolKind::Action(registration) if !is_history_tool(registration) => {
            let description = match registration.not_for {
                Some(not_for) => format!("{}\n\nNot for: {not_for}.", registration.description),
                None => registration.description.to_string(),
            };
            // Without what toolgate drops from every input schema, so that dropping it
            // does not count as toolgate adding less.
            let mut schema = serde_json::to_value((registration.handler.input_schema)()).unwrap_or(Value::Null);
            crate::schema::drop_boilerplate(&mut schema);
            Some(json_tokens(&json!({ "name": registration.name, "description": description, "inputSchema": schema })))
        }
        _ => None,
    };
    ToolCost { name: entry.name.to_string(), shown: shown_tokens(tool), own, output }
}

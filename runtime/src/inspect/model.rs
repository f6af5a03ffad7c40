//! What a server is, as a picture needs it: its domains, its machines with their states and
//! edges, and for each state and edge the tools that are callable in it or fire it.

use serde::Serialize;

use crate::fsm::Machine;
use crate::registry::{Registry, ToolEntry, ToolKind};

/// A server's machines and tools, as `describe` draws them.
#[derive(Debug, Clone, Serialize)]
pub struct Description {
    /// The intent domains, each with its machines and tools.
    pub domains: Vec<DomainView>,
    /// Every machine.
    pub machines: Vec<MachineView>,
    /// Tools in no domain (`switch_domain`, `#[action(global)]`).
    pub global_tools: Vec<ToolMark>,
}

/// One intent domain.
#[derive(Debug, Clone, Serialize)]
pub struct DomainView {
    /// Its name (`invoice`).
    pub name: String,
    /// The machines its tools are bound to.
    pub machines: Vec<String>,
    /// Its tools.
    pub tools: Vec<String>,
}

/// One machine.
#[derive(Debug, Clone, Serialize)]
pub struct MachineView {
    /// Its id.
    pub id: String,
    /// The argument naming an instance, for a keyed machine.
    pub key: Option<String>,
    /// Whether an instance is named within the caller's tenant.
    pub tenant_scoped: bool,
    /// Whether an instance belongs to the principal whose call created it (`owner:
    /// principal`).
    pub principal_owned: bool,
    /// The initial state.
    pub initial: String,
    /// The format its instances' keys are minted in (`mint`), if they are.
    pub mint: Option<String>,
    /// The tools that create its instances (`creates`), in the initial state.
    pub created_by: Vec<String>,
    /// The domains whose tools use it.
    pub domains: Vec<String>,
    /// Its states, in declaration order.
    pub states: Vec<StateView>,
    /// Its transitions.
    pub edges: Vec<Edge>,
}

/// One state, with the tools callable in it.
#[derive(Debug, Clone, Serialize)]
pub struct StateView {
    /// Its name.
    pub name: String,
    /// Whether the workflow ends here.
    pub is_final: bool,
    /// The tools bound to the machine that are callable in this state.
    pub tools: Vec<ToolMark>,
    /// The effects entering it runs (XState's `entry`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry: Vec<String>,
    /// The effects leaving it runs (XState's `exit`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exit: Vec<String>,
}

/// One transition, with the tools that fire it.
#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    /// The state it leaves.
    pub from: String,
    /// The state it enters.
    pub to: String,
    /// Its event; empty for a transition time fires.
    pub event: String,
    /// The guard that must pass for it to be taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// For a transition time fires (`after`): how long the machine stays in `from` first,
    /// in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    /// The tools whose successful call fires it from `from`.
    pub tools: Vec<String>,
}

impl Edge {
    /// How diagrams label it: `DISCHARGE`, `DISCHARGE [fully_funded]`, `after 15m`.
    pub fn label(&self) -> String {
        match (self.after_ms, &self.guard) {
            (Some(ms), _) => format!("after {}", short_duration(ms)),
            (None, Some(guard)) => format!("{} [{guard}]", self.event),
            (None, None) => self.event.clone(),
        }
    }
}

/// `15m`, `2h`, `1d`, `90s`, `1500ms`: the largest unit that divides it.
fn short_duration(ms: u64) -> String {
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// A tool, with what matters to whoever reads the diagram.
#[derive(Debug, Clone, Serialize)]
pub struct ToolMark {
    /// Its name.
    pub name: String,
    /// It moves money or data: it refuses callers without a principal.
    pub transactional: bool,
    /// It runs only with a one-time code.
    pub confirmed: bool,
    /// The scopes a principal needs to see and call it.
    pub scopes: Vec<String>,
}

impl ToolMark {
    pub(crate) fn of(tool: &ToolEntry) -> Self {
        let transactional = match tool.kind {
            ToolKind::Action(registration) => registration.transactional,
            ToolKind::SwitchDomain => false,
        };
        Self {
            name: tool.name.to_string(),
            transactional,
            confirmed: tool.confirm().is_some(),
            scopes: tool.scopes().iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The marks a diagram puts after the name: `$` transactional, `✓` confirmed, and the
    /// scopes in brackets.
    pub(crate) fn label(&self) -> String {
        let mut label = self.name.clone();
        if self.transactional {
            label.push_str(" $");
        }
        if self.confirmed {
            label.push_str(" ✓otp");
        }
        if !self.scopes.is_empty() {
            label.push_str(&format!(" [{}]", self.scopes.join(", ")));
        }
        label
    }
}

/// Whether `tool` is callable in `state` of its machine.
pub(crate) fn callable_in(tool: &ToolEntry, state: &str) -> bool {
    // A creating tool acts on no existing instance: it is the arrow into the initial state.
    let bound = tool.bind_states();
    !tool.creates && (bound.is_empty() || bound.contains(&state))
}

impl Description {
    /// Reads `registry`.
    pub fn of(registry: &Registry) -> Self {
        let tools = registry.tools();
        let machines: Vec<MachineView> = registry.machines().map(|machine| machine_view(machine, tools)).collect();
        let mut domains: Vec<DomainView> = Vec::new();
        for tool in tools {
            let Some(domain) = tool.domain else { continue };
            let index = match domains.iter().position(|d| d.name == domain) {
                Some(index) => index,
                None => {
                    domains.push(DomainView { name: domain.to_string(), machines: Vec::new(), tools: Vec::new() });
                    domains.len() - 1
                }
            };
            let view = &mut domains[index];
            view.tools.push(tool.name.to_string());
            if let Some(machine) = &tool.machine
                && !view.machines.iter().any(|m| m == machine.id())
            {
                view.machines.push(machine.id().to_string());
            }
        }
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        let global_tools = tools.iter().filter(|t| t.domain.is_none()).map(ToolMark::of).collect();
        Self { domains, machines, global_tools }
    }
}

fn machine_view(machine: &Machine, tools: &[ToolEntry]) -> MachineView {
    let spec = machine.spec();
    let own: Vec<&ToolEntry> =
        tools.iter().filter(|t| t.machine.as_deref().is_some_and(|m| m.id() == machine.id())).collect();
    let mut domains: Vec<String> = own.iter().filter_map(|t| t.domain.map(str::to_string)).collect();
    domains.sort();
    domains.dedup();
    let states = spec
        .states
        .iter()
        .map(|state| StateView {
            name: state.name.clone(),
            is_final: state.is_final,
            tools: own.iter().filter(|t| callable_in(t, &state.name)).map(|t| ToolMark::of(t)).collect(),
            entry: state.entry.clone(),
            exit: state.exit.clone(),
        })
        .collect();
    let edges = spec
        .states
        .iter()
        .flat_map(|state| {
            let on = state.on.iter().map(|transition| Edge {
                from: state.name.clone(),
                to: transition.target.clone(),
                event: transition.event.clone(),
                guard: transition.guard.clone(),
                after_ms: None,
                tools: own
                    .iter()
                    .filter(|t| t.transition() == Some(transition.event.as_str()) && callable_in(t, &state.name))
                    .map(|t| t.name.to_string())
                    .collect(),
            });
            let after = state.after.iter().map(|delayed| Edge {
                from: state.name.clone(),
                to: delayed.target.clone(),
                event: String::new(),
                guard: None,
                after_ms: Some(delayed.after_ms),
                tools: Vec::new(),
            });
            on.chain(after).collect::<Vec<_>>()
        })
        .collect();
    MachineView {
        id: machine.id().to_string(),
        key: machine.key().map(str::to_string),
        tenant_scoped: machine.is_tenant_scoped(),
        principal_owned: machine.is_principal_owned(),
        initial: machine.initial().to_string(),
        mint: machine.mint().map(str::to_string),
        created_by: own.iter().filter(|t| t.creates).map(|t| t.name.to_string()).collect(),
        domains,
        states,
        edges,
    }
}

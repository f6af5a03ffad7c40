//! The description drawn: Mermaid, Graphviz DOT, and SVG (DOT laid out in pure Rust).

use std::fmt::Write;

use super::model::{Description, MachineView, StateView};

/// A Mermaid identifier for `state` of `machine` (ids must be unique across machines).
fn node(machine: &str, state: &str) -> String {
    format!("{}__{}", sanitize(machine), sanitize(state))
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// What a machine's title says: its id, its key and tenant scope.
fn machine_title(machine: &MachineView) -> String {
    let mut title = format!("machine {}", machine.id);
    if let Some(key) = &machine.key {
        title.push_str(&format!(" · one per `{key}`"));
    }
    if machine.tenant_scoped {
        title.push_str(" · per tenant");
    }
    title
}

fn state_tools(state: &StateView) -> Vec<String> {
    state.tools.iter().map(|t| t.label()).collect()
}

/// Mermaid `stateDiagram-v2`: each domain a composite state holding its machines, each
/// machine a composite state; edges say `EVENT / tool`; a note lists each state's tools.
pub(super) fn mermaid(description: &Description) -> String {
    let mut out = String::from("stateDiagram-v2\n");
    let placed = placement(description);
    for (domain, machines) in &placed {
        let indent = match domain {
            Some(domain) => {
                let _ = writeln!(out, "  state \"domain {domain}\" as domain__{} {{", sanitize(domain));
                "    "
            }
            None => "  ",
        };
        for machine in machines {
            mermaid_machine(&mut out, machine, indent);
        }
        if domain.is_some() {
            out.push_str("  }\n");
        }
    }
    if !description.global_tools.is_empty() {
        let names: Vec<String> = description.global_tools.iter().map(|t| t.label()).collect();
        let _ = writeln!(out, "  note \"global tools: {}\" as global_tools", names.join(", "));
    }
    out
}

fn mermaid_machine(out: &mut String, machine: &MachineView, indent: &str) {
    let id = format!("machine__{}", sanitize(&machine.id));
    let _ = writeln!(out, "{indent}state \"{}\" as {id} {{", machine_title(machine));
    let inner = format!("{indent}  ");
    for state in &machine.states {
        let _ = writeln!(out, "{inner}state \"{}\" as {}", state.name, node(&machine.id, &state.name));
    }
    let _ = writeln!(out, "{inner}[*] --> {}", node(&machine.id, &machine.initial));
    for edge in &machine.edges {
        let by = if edge.tools.is_empty() { String::new() } else { format!(" / {}", edge.tools.join(", ")) };
        let _ = writeln!(
            out,
            "{inner}{} --> {}: {}{by}",
            node(&machine.id, &edge.from),
            node(&machine.id, &edge.to),
            edge.event
        );
    }
    for state in &machine.states {
        if state.is_final {
            let _ = writeln!(out, "{inner}{} --> [*]", node(&machine.id, &state.name));
        }
        let tools = state_tools(state);
        if !tools.is_empty() {
            let _ = writeln!(out, "{inner}note right of {}: {}", node(&machine.id, &state.name), tools.join("<br/>"));
        }
    }
    let _ = writeln!(out, "{indent}}}");
}

/// The machines grouped by the domain they are drawn in (a machine used by several
/// domains is drawn in the first; one used by none, outside any).
fn placement(description: &Description) -> Vec<(Option<&str>, Vec<&MachineView>)> {
    let mut placed: Vec<(Option<&str>, Vec<&MachineView>)> = Vec::new();
    for machine in &description.machines {
        let domain = machine.domains.first().map(String::as_str);
        match placed.iter_mut().find(|(d, _)| *d == domain) {
            Some((_, machines)) => machines.push(machine),
            None => placed.push((domain, vec![machine])),
        }
    }
    placed
}

fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Graphviz DOT: a cluster per domain, a cluster per machine in it; each state a box with
/// its tools, each edge labelled `EVENT` and the tools that fire it.
pub(super) fn dot(description: &Description) -> String {
    let mut out = String::from(
        "digraph toolgate {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    for (index, (domain, machines)) in placement(description).iter().enumerate() {
        if let Some(domain) = domain {
            let _ = writeln!(
                out,
                "  subgraph cluster_domain_{index} {{\n    label={};",
                quote(&format!("domain {domain}"))
            );
        }
        for machine in machines {
            dot_machine(&mut out, machine);
        }
        if domain.is_some() {
            out.push_str("  }\n");
        }
    }
    if !description.global_tools.is_empty() {
        let names: Vec<String> = description.global_tools.iter().map(|t| t.label()).collect();
        let _ =
            writeln!(out, "  global_tools [shape=note, label={}];", quote(&format!("global: {}", names.join("\n"))));
    }
    out.push_str("}\n");
    out
}

fn dot_machine(out: &mut String, machine: &MachineView) {
    let id = sanitize(&machine.id);
    let _ = writeln!(out, "  subgraph cluster_machine_{id} {{\n    label={};", quote(&machine_title(machine)));
    let _ = writeln!(out, "    {id}__start [shape=point, label=\"\"];");
    for state in &machine.states {
        let mut label = state.name.clone();
        let tools = state_tools(state);
        if !tools.is_empty() {
            label.push_str("\n—\n");
            label.push_str(&tools.join("\n"));
        }
        let peripheries = if state.is_final { ", peripheries=2" } else { "" };
        let _ = writeln!(out, "    {} [label={}{peripheries}];", node(&machine.id, &state.name), quote(&label));
    }
    let _ = writeln!(out, "    {id}__start -> {};", node(&machine.id, &machine.initial));
    for edge in &machine.edges {
        let mut label = edge.event.clone();
        for tool in &edge.tools {
            label.push('\n');
            label.push_str(tool);
        }
        let _ = writeln!(
            out,
            "    {} -> {} [label={}];",
            node(&machine.id, &edge.from),
            node(&machine.id, &edge.to),
            quote(&label)
        );
    }
    out.push_str("  }\n");
}

/// SVG, laid out and drawn in pure Rust (`layout-rs`). That layout engine has no
/// clusters, so each machine is headed by a note naming it, its domain, key and tenant
/// scope, pointing at its initial state; states and edges are labelled as in DOT.
pub(super) fn svg(description: &Description) -> String {
    let mut flat = String::from("digraph toolgate {\n  rankdir=LR;\n");
    for machine in &description.machines {
        let id = sanitize(&machine.id);
        let mut title = machine_title(machine);
        if !machine.domains.is_empty() {
            title.push_str(&format!("\ndomain {}", machine.domains.join(", ")));
        }
        let _ = writeln!(flat, "  {id}__title [shape=note, label={}];", quote(&title));
        for state in &machine.states {
            let mut label = state.name.clone();
            for tool in state_tools(state) {
                label.push('\n');
                label.push_str(&tool);
            }
            let shape = if state.is_final { "doublecircle" } else { "box" };
            let _ = writeln!(flat, "  {} [shape={shape}, label={}];", node(&machine.id, &state.name), quote(&label));
        }
        let _ = writeln!(flat, "  {id}__title -> {};", node(&machine.id, &machine.initial));
        for edge in &machine.edges {
            let mut label = edge.event.clone();
            for tool in &edge.tools {
                label.push_str(" / ");
                label.push_str(tool);
            }
            let _ = writeln!(
                flat,
                "  {} -> {} [label={}];",
                node(&machine.id, &edge.from),
                node(&machine.id, &edge.to),
                quote(&label)
            );
        }
    }
    flat.push_str("}\n");
    let mut parser = layout::gv::DotParser::new(&flat);
    let Ok(graph) = parser.process() else {
        // Our own DOT: a parse failure is a bug here, said in the picture rather than a panic.
        return "<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">toolgate could not lay out this server</text></svg>\n".into();
    };
    let mut builder = layout::gv::GraphBuilder::new();
    builder.visit_graph(&graph);
    let mut visual = builder.get();
    let mut writer = layout::backends::svg::SVGWriter::new();
    visual.do_it(false, false, false, &mut writer);
    writer.finalize()
}

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
    if machine.principal_owned {
        title.push_str(" · its creator's");
    } else if machine.tenant_scoped {
        title.push_str(" · per tenant");
    }
    if let Some(format) = &machine.mint {
        title.push_str(&format!(" · minted `{format}`"));
    }
    title
}

/// What a state's node lists: its tools, then the effects entering and leaving it run
/// (`entry / release_hold`).
fn state_tools(state: &StateView) -> Vec<String> {
    let tools = state.tools.iter().map(|t| t.label());
    let entry = state.entry.iter().map(|effect| format!("entry / {effect}"));
    tools.chain(entry).chain(state.exit.iter().map(|effect| format!("exit / {effect}"))).collect()
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
    let created =
        if machine.created_by.is_empty() { String::new() } else { format!(": {}", machine.created_by.join(", ")) };
    let _ = writeln!(out, "{inner}[*] --> {}{created}", node(&machine.id, &machine.initial));
    for edge in &machine.edges {
        let by = if edge.tools.is_empty() { String::new() } else { format!(" / {}", edge.tools.join(", ")) };
        let _ = writeln!(
            out,
            "{inner}{} --> {}: {}{by}",
            node(&machine.id, &edge.from),
            node(&machine.id, &edge.to),
            edge.label()
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
    match machine.created_by.as_slice() {
        [] => {
            let _ = writeln!(out, "    {id}__start -> {};", node(&machine.id, &machine.initial));
        }
        creators => {
            let label = quote(&creators.join("\n"));
            let _ = writeln!(out, "    {id}__start -> {} [label={label}];", node(&machine.id, &machine.initial));
        }
    }
    for edge in &machine.edges {
        let mut label = edge.label();
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
/// scope, pointing at its initial state; states and edges are labelled as in DOT. Ranks run
/// top to bottom (a machine reads down the page, machines side by side), and the canvas is
/// cropped to the drawing. Its fonts are set on its texts (presentation attributes), never
/// in a `<style>` element: a page that inlines the drawing under a Content-Security-Policy
/// without inline style (the operator's console) shows it as a file viewer does.
pub(super) fn svg(description: &Description) -> String {
    let mut flat = String::from("digraph toolgate {\n");
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
            let mut label = edge.label();
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
    fonts_on_texts(&cropped(&writer.finalize()))
}

/// `svg` with its `<style>` of font classes (`layout-rs` writes `.a14 { font-size: 14px;
/// font-family: Times, serif; }` and `class="a14"` on each text) moved onto the elements of
/// each class as presentation attributes, which draw the same and are no inline style.
/// The classes stay, for a page's own stylesheet to reach.
fn fonts_on_texts(svg: &str) -> String {
    let Some((before, rest)) = svg.split_once("<style>") else { return svg.to_string() };
    let Some((rules, after)) = rest.split_once("</style>") else { return svg.to_string() };
    let mut out = format!("{before}{}", after.strip_prefix('\n').unwrap_or(after));
    for rule in rules.split('}') {
        let Some((selector, declarations)) = rule.split_once('{') else { continue };
        let Some(class) = selector.trim().strip_prefix('.') else { continue };
        let attributes: String = (declarations.split(';'))
            .filter_map(|declaration| declaration.split_once(':'))
            .map(|(property, value)| format!(" {}=\"{}\"", property.trim(), value.trim()))
            .collect();
        out = out.replace(&format!("class=\"{class}\""), &format!("class=\"{class}\"{attributes}"));
    }
    out
}

/// The margin left around the drawing when it is cropped.
const MARGIN: f64 = 16.0;

/// `svg` with its canvas cut to what is drawn on it: `layout-rs` sizes the canvas for its
/// layout's ranks, which can leave half of it empty (three machines side by side).
fn cropped(svg: &str) -> String {
    let Some((width, height)) = drawn_extent(svg) else { return svg.to_string() };
    let (width, height) = ((width + MARGIN).ceil(), (height + MARGIN).ceil());
    let Some(start) = svg.find("<svg ") else { return svg.to_string() };
    let Some(end) = svg[start..].find('>').map(|end| start + end) else { return svg.to_string() };
    let open = format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\""
    );
    format!("{}{open}{}", &svg[..start], &svg[end..])
}

/// How far right and down the shapes, arrows and labels of `svg` reach (outside `<defs>`).
fn drawn_extent(svg: &str) -> Option<(f64, f64)> {
    let body = svg.split_once("</defs>").map_or(svg, |(_, body)| body);
    let (mut right, mut bottom) = (0.0_f64, 0.0_f64);
    for element in body.split('<').skip(1) {
        let (name, rest) = element.split_once(char::is_whitespace).unwrap_or((element, ""));
        let number = |attribute: &str| attribute_value(rest, attribute).and_then(|v| v.parse::<f64>().ok());
        let reach = match name {
            "rect" => number("x")
                .zip(number("width"))
                .map(|(x, w)| x + w)
                .zip(number("y").zip(number("height")).map(|(y, h)| y + h)),
            "ellipse" => number("cx")
                .zip(number("rx"))
                .map(|(x, r)| x + r)
                .zip(number("cy").zip(number("ry")).map(|(y, r)| y + r)),
            "path" => attribute_value(rest, "d").and_then(|d| {
                // Every command's coordinates come in `x y` pairs.
                let numbers: Vec<f64> = d
                    .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                    .filter_map(|n| n.parse().ok())
                    .collect();
                let xs =
                    numbers.iter().step_by(2).copied().fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
                let ys = numbers
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .copied()
                    .fold(None, |m: Option<f64>, y| Some(m.map_or(y, |m| m.max(y))));
                xs.zip(ys)
            }),
            "text" => number("x").zip(number("y")).map(|(x, y)| {
                // Centred lines of the 14px font, one `tspan` each, each below the last.
                let lines: Vec<&str> =
                    element.split("\">").skip(1).map(|l| l.split('<').next().unwrap_or("")).collect();
                let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
                (x + widest * 4.5, y + (lines.len().max(1) as f64 + 0.5) * 14.0)
            }),
            _ => None,
        };
        if let Some((x, y)) = reach {
            (right, bottom) = (right.max(x), bottom.max(y));
        }
    }
    (right > 0.0 && bottom > 0.0).then_some((right, bottom))
}

/// The value of `name="…"` (or `name = "…"`) in an element's attributes.
fn attribute_value<'a>(attributes: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = attributes;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + name.len()..].trim_start();
        if before.is_none_or(char::is_whitespace)
            && let Some(value) = after.strip_prefix('=').map(str::trim_start).and_then(|v| v.strip_prefix('"'))
        {
            return value.split('"').next();
        }
        rest = &rest[at + name.len()..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_is_cropped_to_what_is_drawn() {
        let drawn = concat!(
            "<?xml version=\"1.0\"?><svg width=\"1000\" height=\"900\" viewBox=\"0 0 1000 900\" xmlns=\"http://www.w3.org/2000/svg\">",
            "<defs><polygon points=\"0 0, 900 900\" /></defs>",
            "<rect x=\"10\" y=\"20\" width=\"100\" height=\"50\" />",
            "<ellipse cx=\"300\" cy=\"40\" rx=\"20\" ry=\"10\" />",
            "<path d=\"M 10 70 C 10 90, 12 95, 14 120 \" />",
            "<text x=\"50\" y=\"130\"><tspan x = \"50\" dy=\"1.0em\">a label</tspan></text>",
            "</svg>"
        );
        let svg = cropped(drawn);
        // Right: the ellipse (320); down: the text's line (130 + 1.5 lines of 14px).
        assert!(svg.contains("<svg width=\"336\" height=\"167\" viewBox=\"0 0 336 167\""), "{svg}");
        assert!(svg.ends_with("<rect x=\"10\" y=\"20\" width=\"100\" height=\"50\" /><ellipse cx=\"300\" cy=\"40\" rx=\"20\" ry=\"10\" /><path d=\"M 10 70 C 10 90, 12 95, 14 120 \" /><text x=\"50\" y=\"130\"><tspan x = \"50\" dy=\"1.0em\">a label</tspan></text></svg>"));
        // What it cannot read is left as it is.
        assert_eq!(cropped("<svg></svg>"), "<svg></svg>");
    }

    #[test]
    fn fonts_are_set_on_the_texts_and_no_style_element_is_left() {
        let drawn = "<svg><defs></defs><style>\n.a14 { font-size: 14px; font-family: Times, serif; }\n</style>\n\
                     <text x=\"1\" class=\"a14\">a</text><text><textPath class=\"a14\">b</textPath></text></svg>";
        assert_eq!(
            fonts_on_texts(drawn),
            "<svg><defs></defs><text x=\"1\" class=\"a14\" font-size=\"14px\" font-family=\"Times, serif\">a</text>\
             <text><textPath class=\"a14\" font-size=\"14px\" font-family=\"Times, serif\">b</textPath></text></svg>"
        );
        assert_eq!(fonts_on_texts("<svg></svg>"), "<svg></svg>");
    }
}

//! Seeing a server without running it: its machines drawn as state diagrams (`describe`),
//! exported as XState v5 JSON (`export --xstate`), and its tools graded against the
//! routing checklist of the source documents (`audit`). Everything here reads the checked
//! [`crate::registry::Registry`] and nothing else; the command line
//! (`run_cli`'s subcommands) prints what it returns.

mod audit;
mod cost;
mod model;
mod money;
mod render;
mod xstate;

pub use crate::registry::DEFAULT_CONTEXT_BUDGET;
pub use audit::{Audit, Finding, Rule, Verdict};
pub use cost::{Cost, StateCost, ToolCost};
pub use model::Description;
pub use xstate::{export_xstate, machine_json};

use crate::auth::Roster;
use crate::registry::Registry;

/// How `describe` draws a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Mermaid `stateDiagram-v2`, one diagram per machine (renders in GitHub Markdown).
    Mermaid,
    /// Graphviz DOT: one graph, a cluster per domain, a subgraph per machine.
    Dot,
    /// The description as JSON, for tools.
    Json,
    /// SVG, laid out in pure Rust (no Graphviz install).
    Svg,
    /// What each tool and each state's list costs a model's context, in tokens.
    Cost,
}

impl Format {
    /// `mermaid`, `dot`, `json`, `svg` or `cost`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "mermaid" => Some(Self::Mermaid),
            "dot" => Some(Self::Dot),
            "json" => Some(Self::Json),
            "svg" => Some(Self::Svg),
            "cost" => Some(Self::Cost),
            _ => None,
        }
    }
}

/// Draws every machine of `registry` in `format`: each edge labelled with its event and the
/// tool that fires it, each state with the tools callable in it.
pub fn describe(registry: &Registry, format: Format) -> String {
    let description = Description::of(registry);
    match format {
        Format::Mermaid => render::mermaid(&description),
        Format::Dot => render::dot(&description),
        Format::Json => serde_json::to_string_pretty(&description).expect("a description serializes"),
        Format::Svg => render::svg(&description),
        Format::Cost => Cost::of(registry).table(),
    }
}

/// Grades every tool of `registry` against the routing checklist, its scopes against the
/// principals of `roster` ([`Server::audit`](crate::Server::audit) passes the server's own).
pub fn audit(registry: &Registry, roster: &Roster) -> Audit {
    Audit::of(registry, roster)
}

//! The state gate: which tools a flow may see and call, decided from its snapshot.
//!
//! Listing and calling use the same rule ([`Gate::allows`]), so the call path enforces
//! exactly what `tools/list` shows — whether or not the client refreshed its list.

use rmcp::model::Tool;

use crate::error::{Forbidden, ToolError};
use crate::flow::Snapshot;
use crate::registry::{Registry, ToolEntry};

/// The registry seen through one flow's snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gate<'a> {
    registry: &'a Registry,
    snapshot: &'a Snapshot,
}

/// What a client sees of one tool: which tool, and whether with its compact description.
pub(crate) type ListingEntry = (&'static str, bool);

impl<'a> Gate<'a> {
    pub(crate) fn new(registry: &'a Registry, snapshot: &'a Snapshot) -> Self {
        Self { registry, snapshot }
    }

    /// The state of the tool's machine in this flow (`None` without a machine).
    pub(crate) fn state_of(&self, tool: &'a ToolEntry) -> Option<&'a str> {
        let machine = tool.machine.as_deref()?;
        Some(self.snapshot.state_of(machine.id(), machine.initial()))
    }

    /// Whether the flow may call `tool` now: unbound tools always, bound ones in their
    /// bound states.
    pub(crate) fn allows(&self, tool: &ToolEntry) -> bool {
        let bound = tool.registration.bind_states;
        bound.is_empty() || self.state_of(tool).is_some_and(|state| bound.contains(&state))
    }

    /// Whether `tool` is shown with its compact description (its machine is initial).
    fn is_compact(&self, tool: &ToolEntry) -> bool {
        tool.compact.is_some()
            && tool.machine.as_deref().is_some_and(|m| self.snapshot.state_of(m.id(), m.initial()) == m.initial())
    }

    /// What the flow's `tools/list` shows, in name order.
    pub(crate) fn listing(&self) -> Vec<ListingEntry> {
        self.registry
            .tools()
            .iter()
            .filter(|t| self.allows(t))
            .map(|t| (t.registration.name, self.is_compact(t)))
            .collect()
    }

    /// The MCP definitions of [`Gate::listing`].
    pub(crate) fn tools(&self) -> Vec<Tool> {
        self.registry
            .tools()
            .iter()
            .filter(|t| self.allows(t))
            .map(|t| match (&t.compact, self.is_compact(t)) {
                (Some(compact), true) => compact.clone(),
                _ => t.tool.clone(),
            })
            .collect()
    }

    /// Admits a call to `tool`, or refuses it with `FORBIDDEN` and what *is* allowed.
    pub(crate) fn admit(&self, tool: &ToolEntry) -> Result<(), ToolError> {
        if self.allows(tool) {
            return Ok(());
        }
        let machine = tool.machine.as_deref().map(|m| m.id().to_string()).unwrap_or_default();
        Err(ToolError::Forbidden(Box::new(Forbidden {
            tool: tool.registration.name.to_string(),
            machine,
            current_state: self.state_of(tool).unwrap_or_default().to_string(),
            allowed_tools: self.listing().into_iter().map(|(name, _)| name.to_string()).collect(),
            unlocked_by: tool.unlocked_by.clone(),
        })))
    }
}

//! A finished call's reply, built here once: its `structuredContent` with the instance's
//! `state`, what can be called `next` (and `next_after_switch`), the domain echoed — or a
//! refusal's, which names what the state it names allows — and what the calling session's
//! listing makes of the call. As the engine hands it to the transport that asked.

use serde_json::{Value, json};

use super::Engine;
use super::focus::{Focus, SessionFocus, Ticket, focus_states};
use crate::action::Output;
use crate::auth::Principal;
use crate::domain::field;
use crate::gate::Refused;
use crate::registry::{NEXT_AFTER_SWITCH_FIELD, NEXT_FIELD, STATE_FIELD, ToolEntry};
use crate::store::{Snapshot, StoreKey};
use crate::visibility::{self, ListingEntry, Visibility};

/// A finished call: the `structuredContent` to return, whether it is an error, and
/// whether the session's tool list changed.
pub(crate) struct Reply {
    pub(crate) content: Value,
    /// The content blocks of a handler that returned [`Content`](crate::content::Content).
    pub(crate) blocks: Option<Vec<rmcp::model::ContentBlock>>,
    pub(crate) is_error: bool,
    pub(crate) listing_changed: bool,
    /// The keyed instance whose state the call moved, if it fired a transition on one.
    pub(crate) moved: Option<StoreKey>,
}

impl Reply {
    /// A refusal's reply, its content the error's structured content.
    pub(crate) fn refusal(content: Value) -> Self {
        Self { content, blocks: None, is_error: true, listing_changed: false, moved: None }
    }

    /// The MCP result: the structured content (and, for a handler that returned
    /// [`Content`](crate::content::Content), its blocks as the content).
    pub(crate) fn into_result(self) -> rmcp::model::CallToolResult {
        use rmcp::model::CallToolResult;
        match self.blocks {
            _ if self.is_error => CallToolResult::structured_error(self.content),
            None => CallToolResult::structured(self.content),
            // Content blocks are the result's content; toolgate's own fields, if the tool
            // has any, its structured content.
            Some(blocks) => {
                let mut result = CallToolResult::success(blocks);
                result.structured_content = Some(self.content).filter(|c| c.as_object().is_some_and(|o| !o.is_empty()));
                result
            }
        }
    }
}

impl Engine {
    /// A refused call's reply: the error's structured content; a refusal that names the
    /// state names what that state allows.
    pub(super) fn refused(&self, tool: &ToolEntry, refused: Refused, principal: Option<&Principal>) -> Reply {
        let Refused { error, new_flow, active_domain } = refused;
        let mut content = error.to_structured();
        if new_flow {
            self.flows.explain_new_flow(&error, &mut content);
        }
        let state = content.get("current_state").and_then(Value::as_str).map(str::to_string);
        if let (Some(machine), Some(state), Value::Object(fields)) = (tool.machine.as_deref(), state, &mut content) {
            let flow = Snapshot { active_domain: active_domain.clone(), ..Snapshot::default() };
            self.name_next(fields, machine, &state, &flow, principal);
        }
        field::echo(&mut content, tool.domain.or(active_domain.as_deref()));
        Reply::refusal(content)
    }

    /// A successful call's result: the handler's output with the instance's `state` and
    /// what can be called next, or what `switch_domain` switched to; echoing its domain.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn result(
        &self,
        tool: &ToolEntry,
        output: Option<Output>,
        state: Option<&str>,
        flow_now: &Snapshot,
        session: Option<(&SessionFocus, Ticket)>,
        principal: Option<&Principal>,
        switch: Option<&str>,
        previous_domain: Option<&str>,
    ) -> (Value, Option<Vec<rmcp::model::ContentBlock>>) {
        let (mut content, blocks, domain) = match output {
            Some(Output { structured: mut content, blocks }) => {
                if let (Some(state), Value::Object(fields)) = (state, &mut content) {
                    fields.insert(STATE_FIELD.into(), state.into());
                    if let Some(machine) = tool.machine.as_deref() {
                        self.name_next(fields, machine, state, flow_now, principal);
                    }
                }
                let domain = tool.domain.map(str::to_string).or_else(|| self.active_domain(flow_now));
                (content, blocks, domain)
            }
            None => {
                // `switch_domain`: the domain now active, and what can be called in it.
                let focus = session.map(|(focus, _)| focus.current()).unwrap_or_default();
                let callable = Visibility::new(&self.registry, &visibility::view(flow_now, focus_states(&focus)))
                    .seen_by(principal)
                    .callable_names();
                let switched = json!({ "domain": switch, "previous_domain": previous_domain, "next": callable });
                (switched, None, switch.map(str::to_string))
            }
        };
        field::echo(&mut content, domain.as_deref());
        (content, blocks)
    }

    /// Names in a result's `fields` what can be called after it: `next`, the tools
    /// callable now on `machine`'s instance (or the flow's `machine`) in `state`, as
    /// `principal` sees them; and, where some are left out only because another domain is
    /// active, `next_after_switch`, those tools by the domain to switch to first.
    fn name_next(
        &self,
        fields: &mut serde_json::Map<String, Value>,
        machine: &crate::fsm::Machine,
        state: &str,
        flow: &Snapshot,
        principal: Option<&Principal>,
    ) {
        let gate = Visibility::new(&self.registry, flow).seen_by(principal);
        fields.insert(NEXT_FIELD.into(), Value::Array(gate.next(machine, state).map(Value::from).collect()));
        if !self.registry.is_cross_domain(machine.id()) {
            return;
        }
        let elsewhere = gate.next_after_switch(machine, state);
        if !elsewhere.is_empty() {
            fields.insert(NEXT_AFTER_SWITCH_FIELD.into(), json!(elsewhere));
        }
    }

    /// What a session with `focus` lists over `flow`.
    /// (As `principal` sees it: a tool it lacks the scope for is in neither listing, and
    /// one it holds the scope for is in both.)
    pub(super) fn listing(&self, flow: &Snapshot, focus: &Focus, principal: Option<&Principal>) -> Vec<ListingEntry> {
        Visibility::new(&self.registry, &visibility::view(flow, focus_states(focus))).seen_by(principal).listing()
    }
}

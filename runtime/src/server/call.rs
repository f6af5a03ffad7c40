//! One tool call, from the gate to the commit — where linearizability per flow is kept.
//!
//! A call that writes the flow (fires a transition, switches or selects the domain) holds
//! the flow's lease from before it reads the snapshot until after it commits, so of two
//! such calls on one flow the second reads the first's committed state and is gated on it.
//! A call that writes nothing takes no lease.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use super::Shared;
use crate::action::{ActionRegistration, Ctx};
use crate::domain::{DomainPolicy, field};
use crate::error::ToolError;
use crate::flow::{FlowKey, Snapshot};
use crate::gate::Gate;
use crate::registry::{STATE_FIELD, ToolEntry, ToolKind};
use crate::store::{FlowLease, StoreError};

/// A finished call: the `structuredContent` to return, whether it is an error, and whether
/// the flow's tool list changed.
pub(super) struct Reply {
    pub(super) content: Value,
    pub(super) is_error: bool,
    pub(super) listing_changed: bool,
}

/// A successful call before its reply is built.
struct Done {
    content: Value,
    domain: Option<String>,
    listing_changed: bool,
}

impl Shared {
    /// Runs a call to `tool` and builds its reply; every reply carries `domain`.
    pub(super) async fn call(&self, tool: &ToolEntry, flow: FlowKey, arguments: Map<String, Value>) -> Reply {
        let outcome = match tool.kind {
            ToolKind::Action(registration) => self.call_action(tool, registration, flow, arguments).await,
            ToolKind::SwitchDomain => self.switch_domain(flow, arguments).await,
        };
        match outcome {
            Ok(Done { mut content, domain, listing_changed }) => {
                field::echo(&mut content, domain.as_deref());
                Reply { content, is_error: false, listing_changed }
            }
            Err(error) => {
                let mut content = error.to_structured();
                field::echo(&mut content, tool.domain);
                Reply { content, is_error: true, listing_changed: false }
            }
        }
    }

    async fn lease(&self, flow: &FlowKey) -> Result<FlowLease, ToolError> {
        self.store.lease(flow).await.map_err(store_failure)
    }

    async fn load(&self, flow: &FlowKey) -> Result<Snapshot, ToolError> {
        self.store.load(flow).await.map_err(store_failure)
    }

    async fn commit(&self, flow: &FlowKey, before: &Snapshot, next: &Snapshot) -> Result<(), ToolError> {
        self.store.compare_and_set(flow, before.version, next).await.map_err(store_failure)
    }

    async fn call_action(
        &self,
        tool: &ToolEntry,
        registration: &'static ActionRegistration,
        flow: FlowKey,
        mut arguments: Map<String, Value>,
    ) -> Result<Done, ToolError> {
        let lock = self.registry.lock();
        let declared = tool.domain.map(|domain| field::take_declared(&mut arguments, domain)).transpose()?;
        let mut lease = match registration.transition {
            Some(_) => Some(self.lease(&flow).await?),
            None => None,
        };
        let mut before = self.load(&flow).await?;
        let check_domain = |snapshot: &Snapshot| match (tool.domain, &declared) {
            (Some(domain), Some(declared)) => lock.check_call(tool.name, domain, declared, snapshot),
            _ => Ok(None),
        };
        let mut selects = check_domain(&before)?;
        if selects.is_some() && lease.is_none() {
            // Selecting the domain on first use writes the flow: take the lease and decide
            // again on what is committed now.
            lease = Some(self.lease(&flow).await?);
            before = self.load(&flow).await?;
            selects = check_domain(&before)?;
        }
        let gate = Gate::new(&self.registry, &before);
        gate.admit(tool)?;
        let state = gate.state_of(tool);
        let ctx = Ctx { tool: tool.name, domain: tool.domain, flow: flow.clone(), state: state.map(str::to_string) };

        let mut content = AssertUnwindSafe(registration.handler.call(arguments, ctx))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(ToolError::Internal { message: panic_message(&*panic) }))?;

        let transition = match (registration.transition, tool.machine.as_deref(), state) {
            // The registry checked that every bound state accepts the event.
            (Some(event), Some(machine), Some(from)) => {
                Some((machine, from, machine.target(from, event).unwrap_or(from)))
            }
            _ => None,
        };
        let after = if transition.is_some() || selects.is_some() {
            let mut next = before.next();
            if let Some((machine, _, to)) = transition {
                next.states.insert(machine.id().to_string(), to.to_string());
            }
            if let Some(domain) = selects {
                next.active_domain = Some(domain);
            }
            self.commit(&flow, &before, &next).await?;
            if let Some((machine, from, to)) = transition {
                tracing::info!(tool = tool.name, %flow, machine = machine.id(), from, to, "transition committed");
            }
            Some(next)
        } else {
            None
        };
        drop(lease);

        let after_gate = after.as_ref().map(|next| Gate::new(&self.registry, next));
        let final_gate = after_gate.as_ref().unwrap_or(&gate);
        if let (Some(state), Value::Object(fields)) = (final_gate.state_of(tool), &mut content) {
            fields.insert(STATE_FIELD.into(), state.into());
        }
        let domain = tool.domain.or_else(|| final_gate.active_domain()).map(str::to_string);
        let listing_changed = after_gate.is_some_and(|after| after.listing() != gate.listing());
        Ok(Done { content, domain, listing_changed })
    }

    /// `switch_domain`: moves the flow's active domain; no machine state changes.
    async fn switch_domain(&self, flow: FlowKey, arguments: Map<String, Value>) -> Result<Done, ToolError> {
        let lock = self.registry.lock();
        debug_assert_ne!(lock.policy, DomainPolicy::Off, "switch_domain exists only under a lock");
        let request = lock.parse_switch(&arguments)?;
        let _lease = self.lease(&flow).await?;
        let before = self.load(&flow).await?;
        let previous = before.active_domain.clone();
        let after = if previous.as_deref() == Some(request.domain.as_str()) {
            before.clone()
        } else {
            let mut next = before.next();
            next.active_domain = Some(request.domain.clone());
            self.commit(&flow, &before, &next).await?;
            tracing::info!(%flow, from = ?previous, to = %request.domain, reason = %request.reason, "domain switched");
            next
        };
        let (gate_before, gate_after) = (Gate::new(&self.registry, &before), Gate::new(&self.registry, &after));
        Ok(Done {
            content: json!({
                "domain": request.domain,
                "previous_domain": previous,
                "tools": gate_after.callable_names(),
            }),
            listing_changed: gate_before.listing() != gate_after.listing(),
            domain: Some(request.domain),
        })
    }
}

fn store_failure(error: StoreError) -> ToolError {
    match error {
        StoreError::Unavailable(message) => ToolError::StoreUnavailable { message, retry_after_ms: 1000 },
        // Under the lease a conflict means the lease was lost (e.g. it expired on a
        // shared backend while the handler ran): nothing was committed.
        StoreError::Conflict { .. } => ToolError::StoreUnavailable {
            message: format!("{error}; the flow changed concurrently and nothing was committed"),
            retry_after_ms: 0,
        },
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("the handler panicked: {detail}; nothing was committed")
}

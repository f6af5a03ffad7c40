//! One tool call, from gate to commit — the place linearizability per flow is kept.
//!
//! A transitioning call holds the flow's lease from before it reads the snapshot until
//! after it commits, so of two such calls on one flow the second reads the first's
//! committed state and is gated on it. A call that fires no transition takes no lease.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::Shared;
use crate::action::Ctx;
use crate::error::ToolError;
use crate::flow::FlowKey;
use crate::gate::Gate;
use crate::registry::ToolEntry;
use crate::store::StoreError;

/// A successful call: what to return, and whether the flow's tool list changed.
pub(super) struct Done {
    pub(super) content: Value,
    pub(super) listing_changed: bool,
}

impl Shared {
    pub(super) async fn call(
        &self,
        tool: &ToolEntry,
        flow: FlowKey,
        arguments: Map<String, Value>,
    ) -> Result<Done, ToolError> {
        let registration = tool.registration;
        let _lease = match registration.transition {
            Some(_) => Some(self.store.lease(&flow).await.map_err(store_failure)?),
            None => None,
        };
        let before = self.store.load(&flow).await.map_err(store_failure)?;
        let gate = Gate::new(&self.registry, &before);
        gate.admit(tool)?;
        let state = gate.state_of(tool);
        let ctx = Ctx {
            tool: registration.name,
            domain: registration.domain,
            flow: flow.clone(),
            state: state.map(str::to_string),
        };

        let mut content = AssertUnwindSafe(registration.handler.call(arguments, ctx))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(ToolError::Internal { message: panic_message(&*panic) }))?;

        let mut after = None;
        if let (Some(event), Some(machine), Some(from)) = (registration.transition, tool.machine.as_deref(), state) {
            // The registry checked that every bound state accepts the event.
            let to = machine.target(from, event).unwrap_or(from);
            let next = before.with_state(machine.id(), to);
            self.store.compare_and_set(&flow, before.version, &next).await.map_err(store_failure)?;
            tracing::info!(tool = registration.name, %flow, machine = machine.id(), from, to, "transition committed");
            after = Some(next);
        }
        let after_gate = after.as_ref().map(|next| Gate::new(&self.registry, next));
        let final_gate = after_gate.as_ref().unwrap_or(&gate);
        if let (Some(state), Value::Object(fields)) = (final_gate.state_of(tool), &mut content) {
            fields.insert(crate::registry::STATE_FIELD.into(), state.into());
        }
        let listing_changed = after_gate.is_some_and(|after| after.listing() != gate.listing());
        Ok(Done { content, listing_changed })
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

//! One tool call: name its flow, let the gate admit it, run the handler, commit, reply.
//!
//! Linearizability per instance and per flow is kept by the gate (`gate::admit`): a call
//! that writes a record holds that record's lease from before it reads the record until
//! after it commits, so of two such calls the second reads the first's committed state
//! and is gated on it. Here the handler runs under a deadline (`TIMEOUT`), the client's
//! cancellation (`CANCELLED`) and a panic guard (`INTERNAL`); a call that does not finish
//! commits nothing.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use super::Shared;
use crate::action::{ActionRegistration, CallClient, Ctx};
use crate::domain::{DomainPolicy, field};
use crate::error::ToolError;
use crate::flow::{FlowRef, Origin};
use crate::gate::{self, Committed, Gate, Records};
use crate::registry::{STATE_FIELD, ToolEntry, ToolKind};
use crate::store::Snapshot;

/// The instance a session focuses on, per keyed machine: the one its last successful call
/// on that machine named, with the state that call left it in.
pub(crate) type Focus = BTreeMap<String, FocusEntry>;

/// One keyed machine's focus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FocusEntry {
    /// The instance (`INV-7`).
    pub(crate) instance: String,
    /// Its state after the call.
    pub(crate) state: String,
}

/// The states a focus lays over a flow's snapshot.
pub(crate) fn focus_states(focus: &Focus) -> impl Iterator<Item = (&str, &str)> {
    focus.iter().map(|(machine, entry)| (machine.as_str(), entry.state.as_str()))
}

/// A finished call: the `structuredContent` to return, whether it is an error, whether
/// the session's tool list changed, and where the session's focus moved.
pub(super) struct Reply {
    pub(super) content: Value,
    pub(super) is_error: bool,
    pub(super) listing_changed: bool,
    pub(super) focus: Option<(String, FocusEntry)>,
}

/// A successful call before its reply is built.
#[derive(Default)]
struct Done {
    content: Value,
    domain: Option<String>,
    listing_changed: bool,
    focus: Option<(String, FocusEntry)>,
    /// When the flow a handle names expires, if it exists after the call.
    flow_expires_at_ms: Option<u64>,
}

impl Shared {
    /// Runs a call to `tool` and builds its reply; every reply carries `domain`. `focus` is
    /// the session's focus (`None` where nothing is listed per connection).
    pub(super) async fn call(
        &self,
        tool: &ToolEntry,
        origin: &Origin,
        focus: Option<&Focus>,
        client: CallClient,
        arguments: Map<String, Value>,
    ) -> Reply {
        // The arguments first, against the tool's schema: every bad field at once.
        let arguments = Value::Object(arguments);
        let checked = tool.arguments.as_ref().map_or(Ok(()), |check| check.check(&arguments));
        let mut arguments = match arguments {
            Value::Object(arguments) => arguments,
            _ => Map::new(),
        };
        let flow = match checked {
            Err(error) => Err(error),
            Ok(()) if tool.needs_flow => self.flows.identify(origin, &mut arguments).map(Some),
            Ok(()) => Ok(None),
        };
        let outcome = match (&flow, tool.kind) {
            (Err(error), _) => Err(error.clone()),
            (Ok(flow), ToolKind::Action(registration)) => {
                self.call_action(tool, registration, flow.as_ref(), focus, client, arguments).await
            }
            (Ok(flow), ToolKind::SwitchDomain) => match flow {
                Some(flow) => self.switch_domain(flow, focus, arguments).await,
                None => Err(ToolError::internal("switch_domain was called without a flow")),
            },
        };
        let flow = flow.ok().flatten();
        match outcome {
            Ok(Done { mut content, domain, listing_changed, focus, flow_expires_at_ms }) => {
                field::echo(&mut content, domain.as_deref());
                if let (Some(id), Some(expires), Value::Object(fields)) =
                    (flow.as_ref().and_then(|f| f.handle_id.as_deref()), flow_expires_at_ms, &mut content)
                {
                    fields.insert(self.flows.argument().into(), self.flows.handle(id, expires).into());
                }
                Reply { content, is_error: false, listing_changed, focus }
            }
            Err(error) => {
                let mut content = error.to_structured();
                if flow.as_ref().is_some_and(|f| f.is_new) {
                    self.flows.explain_new_flow(&error, &mut content);
                }
                field::echo(&mut content, tool.domain);
                Reply { content, is_error: true, listing_changed: false, focus: None }
            }
        }
    }

    /// The store as this server's calls see it.
    pub(super) fn records(&self) -> Records<'_> {
        Records { store: self.store.as_ref(), lease_wait: self.limits.lease_wait, flows: &self.flows }
    }

    async fn call_action(
        &self,
        tool: &ToolEntry,
        registration: &'static ActionRegistration,
        flow: Option<&FlowRef>,
        focus: Option<&Focus>,
        client: CallClient,
        mut arguments: Map<String, Value>,
    ) -> Result<Done, ToolError> {
        let limiter = self.limiters.get(tool.name);
        let admitted =
            gate::admit(&self.registry, self.records(), limiter, tool, registration, flow, &mut arguments).await?;
        let ctx = Ctx {
            tool: tool.name,
            domain: tool.domain,
            flow: flow.map(|f| f.key.clone()),
            instance: admitted.instance.as_ref().map(|i| i.id.clone()),
            machine_state: admitted.from.clone(),
            states: self.states.clone(),
            client,
        };
        let mut content = self.run(registration, arguments, ctx).await?;
        let (from, flow_before) = (admitted.from.clone(), admitted.flow_before.clone());
        let instance = admitted.instance.as_ref().map(|i| (i.machine.id().to_string(), i.id.clone()));
        let Committed { flow_after, to } = admitted.commit(tool.name).await?;

        let state = to.or(from);
        if let (Some(state), Value::Object(fields)) = (&state, &mut content) {
            fields.insert(STATE_FIELD.into(), state.as_str().into());
        }
        let flow_now = flow_after.as_ref().unwrap_or(&flow_before);
        let new_focus =
            instance.zip(state).map(|((machine, instance), state)| (machine, FocusEntry { instance, state }));
        let listing_changed = focus.is_some_and(|focus| {
            let focus_moved = new_focus.as_ref().is_some_and(|(machine, entry)| focus.get(machine) != Some(entry));
            (flow_after.is_some() || focus_moved) && {
                let mut focus_after = focus.clone();
                focus_after.extend(new_focus.clone());
                self.listing(&flow_before, focus) != self.listing(flow_now, &focus_after)
            }
        });
        let domain =
            tool.domain.map(str::to_string).or_else(|| self.registry.lock().active(flow_now).map(str::to_string));
        Ok(Done {
            content,
            domain,
            listing_changed,
            focus: new_focus,
            flow_expires_at_ms: flow_now.expires_at_ms.filter(|_| flow_now.version > 0),
        })
    }

    /// What a session with `focus` lists over `flow`.
    fn listing(&self, flow: &Snapshot, focus: &Focus) -> Vec<gate::ListingEntry> {
        Gate::new(&self.registry, &gate::view(flow, focus_states(focus))).listing()
    }

    /// Runs the handler under its deadline, the client's cancellation and a panic guard;
    /// the synchronous part of the call (deserializing the input, creating the future) is
    /// inside all three. A cancelled or timed-out handler's future is dropped.
    async fn run(
        &self,
        registration: &'static ActionRegistration,
        arguments: Map<String, Value>,
        ctx: Ctx,
    ) -> Result<Value, ToolError> {
        let deadline = registration.timeout_ms.map_or(self.limits.handler_timeout, Duration::from_millis);
        let cancellation = ctx.client.cancellation().clone();
        let running = AssertUnwindSafe(async move { (registration.handler.call)(arguments, ctx).await }).catch_unwind();
        let finished = tokio::select! {
            finished = tokio::time::timeout(deadline, running) => finished,
            () = cancellation.cancelled() => {
                tracing::info!(tool = registration.name, "call cancelled by the client; nothing committed");
                return Err(ToolError::cancelled());
            }
        };
        match finished {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(ToolError::internal(format_args!(
                "`{}`'s handler panicked: {}",
                registration.name,
                panic_message(&*panic)
            ))),
            Err(_) => {
                tracing::warn!(
                    tool = registration.name,
                    deadline_ms = deadline.as_millis() as u64,
                    "handler timed out"
                );
                Err(ToolError::timeout(deadline.as_millis() as u64))
            }
        }
    }

    /// `switch_domain`: moves the flow's active domain; no machine state changes.
    async fn switch_domain(
        &self,
        flow: &FlowRef,
        focus: Option<&Focus>,
        arguments: Map<String, Value>,
    ) -> Result<Done, ToolError> {
        let lock = self.registry.lock();
        debug_assert_ne!(lock.policy, DomainPolicy::Off, "switch_domain exists only under a lock");
        let request = lock.parse_switch(&arguments)?;
        let records = self.records();
        let _lease = records.lease(&flow.key, "flow").await?;
        let before = records.load_flow(Some(flow)).await?;
        let previous = before.active_domain.clone();
        let changes = previous.as_deref() != Some(request.domain.as_str());
        let after = if changes || flow.is_new || records.needs_refresh(Some(flow), &before) {
            let mut next = before.next();
            next.active_domain = Some(request.domain.clone());
            let next = records.commit(&flow.key, &before, next).await?;
            if changes {
                tracing::info!(flow = %flow.key, from = ?previous, to = %request.domain, reason = %request.reason, "domain switched");
            }
            next
        } else {
            before.clone()
        };
        let empty = Focus::new();
        let focus_now = focus.unwrap_or(&empty);
        let callable = Gate::new(&self.registry, &gate::view(&after, focus_states(focus_now))).callable_names();
        Ok(Done {
            content: json!({ "domain": request.domain, "previous_domain": previous, "tools": callable }),
            listing_changed: focus.is_some()
                && changes
                && self.listing(&before, focus_now) != self.listing(&after, focus_now),
            domain: Some(request.domain),
            focus: None,
            flow_expires_at_ms: after.expires_at_ms,
        })
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

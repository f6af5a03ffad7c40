//! One tool call, from naming its flow and instance to the commit — where linearizability
//! per instance and per flow is kept.
//!
//! A call that writes a record (fires a transition, selects or switches the domain,
//! starts or refreshes a handle's flow) holds that record's lease from before it reads
//! the record until after it commits, so of two such calls the second reads the first's
//! committed state and is gated on it. Leases are taken flow first, then instance, and
//! waited for only so long (`FLOW_BUSY`); handlers run under a deadline (`TIMEOUT`) and a
//! panic guard (`INTERNAL`), and a call that does not finish commits nothing. A call that
//! writes nothing takes no lease.

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
use crate::fsm::Machine;
use crate::gate::{self, Gate};
use crate::registry::{STATE_FIELD, ToolEntry, ToolKind};
use crate::store::{FlowLease, Snapshot, StoreError, StoreKey, now_ms};

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

/// The keyed machine's instance a call names.
struct Instance<'a> {
    machine: &'a Machine,
    id: String,
    key: StoreKey,
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
        mut arguments: Map<String, Value>,
    ) -> Reply {
        let flow = if tool.needs_flow { self.flows.identify(origin, &mut arguments).map(Some) } else { Ok(None) };
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

    async fn lease(&self, key: &StoreKey, what: &'static str) -> Result<FlowLease, ToolError> {
        let wait = self.limits.lease_wait;
        match tokio::time::timeout(wait, self.store.lease(key)).await {
            Ok(lease) => lease.map_err(store_failure),
            Err(_) => Err(ToolError::FlowBusy { what, retry_after_ms: wait.as_millis().max(1) as u64 }),
        }
    }

    async fn load(&self, key: &StoreKey) -> Result<Snapshot, ToolError> {
        self.store.load(key).await.map_err(store_failure)
    }

    /// The flow's snapshot; a flow a handle names must still exist.
    async fn load_flow(&self, flow: Option<&FlowRef>) -> Result<Snapshot, ToolError> {
        let Some(flow) = flow.filter(|f| !f.is_new) else { return Ok(Snapshot::default()) };
        let snapshot = self.load(&flow.key).await?;
        if flow.handle_id.is_some() && snapshot.version == 0 {
            return Err(ToolError::HandleExpired {
                message: "the conversation this handle names has ended or expired".into(),
                hint: self.flows.restart_hint().into(),
            });
        }
        Ok(snapshot)
    }

    /// Commits `next` over `before`; a handle's flow gets a fresh expiry.
    async fn commit(&self, key: &StoreKey, before: &Snapshot, mut next: Snapshot) -> Result<Snapshot, ToolError> {
        if key.is_handle_flow() {
            next.expires_at_ms = Some(self.flows.expiry_from(next.updated_at_ms));
        }
        next.version = self.store.compare_and_set(key, before.version, &next).await.map_err(store_failure)?;
        Ok(next)
    }

    /// Whether a handle's flow is past half its life and should be refreshed on this use.
    fn needs_refresh(&self, flow: Option<&FlowRef>, snapshot: &Snapshot) -> bool {
        let half_life = self.flows.ttl().as_millis() as u64 / 2;
        flow.is_some_and(|f| f.handle_id.is_some() && !f.is_new)
            && snapshot.expires_at_ms.is_some_and(|at| at.saturating_sub(now_ms()) < half_life)
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
        let lock = self.registry.lock();
        let declared = tool.domain.map(|domain| field::take_declared(&mut arguments, domain)).transpose()?;
        let machine = tool.machine.as_deref();
        let instance = match (&tool.instance, machine) {
            (Some(key), Some(machine)) => {
                let id = key.read(&arguments)?;
                Some(Instance { machine, key: StoreKey::instance(machine.id(), &id), id })
            }
            _ => None,
        };
        let transition = registration.transition.filter(|_| machine.is_some());
        let flow_key = flow.map(|f| &f.key);

        // Leases: the flow's before the instance's, always in that order.
        let mut flow_lease = match (transition, &instance, flow_key) {
            (Some(_), None, Some(key)) => Some(self.lease(key, "flow").await?),
            _ => None,
        };
        let mut flow_before = self.load_flow(flow).await?;
        let check_domain = |snapshot: &Snapshot| match (tool.domain, &declared) {
            (Some(domain), Some(declared)) => lock.check_call(tool.name, domain, declared, snapshot),
            _ => Ok(None),
        };
        let mut selects = check_domain(&flow_before)?;
        let mut refresh = self.needs_refresh(flow, &flow_before);
        if let (true, None, Some(key)) = (selects.is_some() || refresh, &flow_lease, flow_key) {
            // This call writes the flow after all: take its lease and decide again on what
            // is committed now.
            flow_lease = Some(self.lease(key, "flow").await?);
            flow_before = self.load_flow(flow).await?;
            selects = check_domain(&flow_before)?;
            refresh = self.needs_refresh(flow, &flow_before);
        }
        let instance_lease = match (&instance, transition) {
            (Some(instance), Some(_)) => Some(self.lease(&instance.key, "instance").await?),
            _ => None,
        };
        let instance_before = match &instance {
            Some(instance) => Some(self.load(&instance.key).await?),
            None => None,
        };
        let instance_state = instance
            .as_ref()
            .zip(instance_before.as_ref())
            .map(|(i, snapshot)| (i.machine.id(), snapshot.state_of(i.machine.id(), i.machine.initial()).to_string()));
        let view = gate::view(&flow_before, instance_state.as_ref().map(|(m, s)| (*m, s.as_str())));
        let gate = Gate::new(&self.registry, &view);
        gate.admit(tool, instance.as_ref().map(|i| i.id.as_str()))?;
        let from = gate.state_of(tool).map(str::to_string);
        let ctx = Ctx {
            tool: tool.name,
            domain: tool.domain,
            flow: flow.filter(|f| !f.is_new || transition.is_some()).map(|f| f.key.clone()),
            instance: instance.as_ref().map(|i| i.id.clone()),
            machine_state: from.clone(),
            states: self.states.clone(),
            client,
        };
        let mut content = self.run(registration, arguments, ctx).await?;

        let to = transition
            .zip(machine)
            .zip(from.as_deref())
            .map(|((event, machine), from)| machine.target(from, event).unwrap_or(from).to_string());
        // Commit the flow first, then the instance: should the second commit fail, the
        // first (a domain selection, an expiry) is harmless on its own.
        let flow_transition = to.as_ref().filter(|_| instance.is_none());
        let flow_after = match flow {
            Some(flow) if flow_transition.is_some() || selects.is_some() || refresh => {
                let mut next = flow_before.next();
                if let (Some(to), Some(machine)) = (flow_transition, machine) {
                    next.states.insert(machine.id().to_string(), to.clone());
                }
                if let Some(domain) = &selects {
                    next.active_domain = Some(domain.clone());
                }
                Some(self.commit(&flow.key, &flow_before, next).await?)
            }
            _ => None,
        };
        if let (Some(instance), Some(before), Some(to)) = (&instance, &instance_before, &to) {
            self.commit(&instance.key, before, before.with_state(instance.machine.id(), to)).await?;
        }
        drop((instance_lease, flow_lease));
        if let Some((to, machine)) = to.as_ref().zip(machine) {
            let on = instance.as_ref().map_or_else(|| flow_key.map(ToString::to_string), |i| Some(i.key.to_string()));
            tracing::info!(tool = tool.name, on, machine = machine.id(), from, to, "transition committed");
        }

        let state = to.or(from);
        if let (Some(state), Value::Object(fields)) = (&state, &mut content) {
            fields.insert(STATE_FIELD.into(), state.as_str().into());
        }
        let flow_now = flow_after.as_ref().unwrap_or(&flow_before);
        let new_focus =
            instance.zip(state).map(|(i, state)| (i.machine.id().to_string(), FocusEntry { instance: i.id, state }));
        let listing_changed = focus.is_some_and(|focus| {
            let focus_moved = new_focus.as_ref().is_some_and(|(machine, entry)| focus.get(machine) != Some(entry));
            (flow_after.is_some() || focus_moved) && {
                let mut focus_after = focus.clone();
                focus_after.extend(new_focus.clone());
                self.listing(&flow_before, focus) != self.listing(flow_now, &focus_after)
            }
        });
        let domain = tool.domain.map(str::to_string).or_else(|| lock.active(flow_now).map(str::to_string));
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
                return Err(ToolError::Cancelled);
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
                Err(ToolError::Timeout { timeout_ms: deadline.as_millis() as u64 })
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
        let _lease = self.lease(&flow.key, "flow").await?;
        let before = self.load_flow(Some(flow)).await?;
        let previous = before.active_domain.clone();
        let changes = previous.as_deref() != Some(request.domain.as_str());
        let after = if changes || flow.is_new || self.needs_refresh(Some(flow), &before) {
            let mut next = before.next();
            next.active_domain = Some(request.domain.clone());
            let next = self.commit(&flow.key, &before, next).await?;
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

fn store_failure(error: StoreError) -> ToolError {
    match error {
        StoreError::Unavailable(_) => ToolError::store_unavailable(error, 1000),
        // Under the lease a conflict means the lease was lost (e.g. it expired on a
        // shared backend while the handler ran): nothing was committed.
        StoreError::Conflict { .. } => {
            ToolError::store_unavailable(format_args!("{error}; the record changed under a held lease"), 0)
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

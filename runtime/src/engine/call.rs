//! One tool call around the admission pipeline: after `gate::admit` lets it in, build the
//! handler's context, run the handler (`engine::run_handler`: under its deadline, the
//! client's cancellation and a panic guard), commit (`commit/`), and hand what it did to
//! `reply.rs`, which builds the one reply. Nothing here decides whether a call may run:
//! that is the pipeline's (see `docs/call-pipeline.md`).
//!
//! A call that does not finish — its handler failed, timed out, panicked or was
//! cancelled — commits nothing.

use serde_json::{Map, Value};
use tracing::Instrument;

use super::focus::FocusEntry;
use super::reply::Reply;
use super::tasks::TaskStart;
use super::{CallSource, Engine, Limits};
use crate::action::{CallClient, CallNote, ContextSlot, Ctx, TransactionSlot};
use crate::commit::Committed;
use crate::engine::run_handler;
use crate::error::{CorrelationId, ToolError};
use crate::flow::FlowId;
use crate::gate::{self, Admission, Admitted, Judge, Refused};
use crate::registry::{ToolEntry, ToolKind};
use crate::store::StoreKey;
use crate::telemetry::{self, CallSpan};

/// A successful call, its result as the reply carries it.
struct Done {
    content: Value,
    blocks: Option<Vec<rmcp::model::ContentBlock>>,
    listing_changed: bool,
    /// The keyed instance whose state a transition moved.
    moved: Option<StoreKey>,
    /// The idempotency record was written with the call's commit (in its handler's
    /// transaction), not after it.
    remembered: bool,
}

impl Engine {
    /// Runs a call to `tool` and builds its reply, in the call's span and as the call of a
    /// fresh correlation id; counts it (by tool and outcome, a refusal by its code) and
    /// times it.
    ///
    /// (`call_as`'s future itself, not one that awaits it: a future moved into another is
    /// copied whole, and this one is large.)
    pub(crate) fn call<'a>(
        &'a self,
        tool: &'a ToolEntry,
        source: CallSource<'a>,
        client: CallClient,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = Reply> + 'a {
        self.call_as(tool, source, client, arguments, None)
    }

    /// [`call`](Self::call), as the MCP task `task` when one is given: once admitted, the
    /// task is created (and holds the call's instance) before the handler runs; a call
    /// refused never becomes one.
    pub(crate) async fn call_as(
        &self,
        tool: &ToolEntry,
        source: CallSource<'_>,
        client: CallClient,
        arguments: Map<String, Value>,
        task: Option<&mut TaskStart>,
    ) -> Reply {
        // Counted until its reply, for a shutdown to wait for.
        let _in_flight = self.in_flight.calls.token();
        // The call's correlation id: on its span, and in any error it ends with that hides
        // its detail (the task-local `within` sets, which `ToolError::internal` reads).
        let id = CorrelationId::fresh();
        let span = CallSpan::start(tool.name, tool.domain, id, source.trace.as_ref());
        // Who calls, for the refusals page, should the call be refused.
        let caller = source.caller.principal.clone();
        if let Some(principal) = &source.caller.principal
            && !span.span.is_disabled()
        {
            span.span.record("principal", principal.subject());
        }
        let running = id.within(self.judge_and_run(tool, source, client, arguments, task));
        let mut reply = running.instrument(span.span.clone()).await;
        // Named as the client calls them: actions, where tools are grouped.
        self.registry.regroup(&mut reply.content, tool.domain);
        let code = reply.is_error.then(|| reply.content.get("code").and_then(Value::as_str).unwrap_or("INTERNAL"));
        if !span.span.is_disabled() {
            span.span.record("verdict", crate::error::verdict(code));
            if let Some(code) = code {
                span.span.record("code", code);
            }
            span.span.record("latency_ms", span.elapsed().as_secs_f64() * 1000.0);
            tracing::info!(parent: &span.span, "call finished");
        }
        telemetry::record_call(tool.name, code, span.elapsed());
        if let Some(code) = code {
            self.refusals.record(crate::store::now_ms(), tool.name, code, caller.as_ref());
        }
        reply
    }

    /// Judges a call to `tool`, runs it if admitted, and builds its reply; every reply
    /// carries `domain`: the tool's, or for a global tool the flow's active domain.
    async fn judge_and_run(
        &self,
        tool: &ToolEntry,
        source: CallSource<'_>,
        client: CallClient,
        arguments: Map<String, Value>,
        task: Option<&mut TaskStart>,
    ) -> Reply {
        // Only a confirmed tool may talk to the client before it runs.
        let link = tool.confirm().is_some().then(|| client.link_shared());
        let judge = Judge {
            registry: &self.registry,
            confirmations: &self.confirmations,
            client: link.as_deref(),
            records: self.records(),
            limiter: self.limiters.get(tool.name),
        };
        let (outcome, idempotency) = match gate::admit(&judge, tool, source.origin, source.caller, arguments).await {
            // An idempotent retry: the first result, as it was.
            Ok(Admission::Replay(first)) => {
                // The blocks were kept as the reply carried them; what does not read back
                // (a record from an older version) leaves the structured content alone.
                let blocks = first.blocks.and_then(|blocks| serde_json::from_value(blocks).ok());
                return Reply { content: first.content, blocks, is_error: false, listing_changed: false, moved: None };
            }
            Ok(Admission::Run(mut admitted)) => {
                let active = tool.domain.is_none().then(|| self.active_domain(&admitted.flow_before));
                let idempotency = admitted.idempotency.clone();
                let task_started = task.is_some();
                // Boxed: only a task's call builds this future, which would otherwise
                // enlarge every call's.
                let begun = match task {
                    Some(task) => Box::pin(self.begin_task(task, &mut admitted)).await,
                    None => Ok(()),
                };
                // A task's call runs as long as the task is kept, unless its action says.
                let limits = match begun {
                    Ok(()) if task_started => Limits { handler_timeout: self.limits.tasks.ttl, ..self.limits },
                    _ => self.limits,
                };
                let done = match begun {
                    Ok(()) => self.run_admitted(admitted, &source, client, limits).await,
                    Err(error) => Err(error),
                };
                let done = done.map_err(|error| Refused { error, new_flow: false, active_domain: active.flatten() });
                (done, idempotency)
            }
            Err(refused) => (Err(refused), None),
        };
        match outcome {
            Ok(Done { content, blocks, listing_changed, moved, remembered }) => {
                if let (Some(idempotency), false) = (idempotency, remembered) {
                    let kept_blocks = blocks.as_ref().and_then(|blocks| serde_json::to_value(blocks).ok());
                    idempotency.remember(self.store.as_ref(), &content, kept_blocks).await;
                }
                Reply { content, blocks, is_error: false, listing_changed, moved }
            }
            Err(refused) => self.refused(tool, refused, source.caller.principal.as_ref()),
        }
    }

    /// Steps 11 and 12: the handler (for an action), then the commit.
    async fn run_admitted(
        &self,
        mut admitted: Admitted<'_>,
        source: &CallSource<'_>,
        client: CallClient,
        limits: Limits,
    ) -> Result<Done, ToolError> {
        let (session, principal) = (source.session, source.caller.principal.as_ref());
        let tool = admitted.tool;
        let note = CallNote::default();
        let effects = crate::effect::CallEffects::default();
        let context = match &admitted.instance {
            Some(instance) if tool.machine.as_deref().is_some_and(|m| m.context().is_some()) => ContextSlot::new(
                instance.machine.id(),
                &instance.id,
                admitted.committed_context(),
                self.limits.max_context_bytes,
            ),
            _ => ContextSlot::default(),
        };
        // A handler that takes a `Transaction` opens it with its first statement.
        // A call that may move a machine with transactional hooks commits in one too.
        let hooked = admitted.may_run_hooks();
        let transaction = match tool.takes_transaction || hooked {
            true => TransactionSlot::new(self.store.clone(), self.tables.clone()),
            false => TransactionSlot::default(),
        };
        let output = match tool.kind {
            ToolKind::Action(registration) => {
                let ctx = Ctx {
                    tool: tool.name,
                    domain: tool.domain,
                    flow: admitted.flow.as_ref().map(|f| f.key.clone()),
                    instance: admitted.instance.as_ref().map(|i| i.id.clone()),
                    machine_state: admitted.from.clone(),
                    states: self.states.clone(),
                    principal: principal.cloned(),
                    client,
                    engine: self.this.clone() as std::sync::Weak<dyn crate::action::CallEngine>,
                    note: note.clone(),
                    effects: effects.clone(),
                    context: context.clone(),
                    transaction: transaction.clone(),
                };
                let arguments = std::mem::take(&mut admitted.arguments);
                match run_handler(limits, registration, arguments, ctx)
                    .await
                    .and_then(|output| tool.shape_output(output))
                {
                    Ok(output) => Some(output),
                    Err(error) => {
                        // Nothing commits — what the handler wrote is rolled back as its
                        // transaction drops — and a task's instance is free again (boxed:
                        // rare, and every call's future would carry it).
                        if tool.takes_transaction {
                            drop(Box::pin(transaction.take()).await);
                        }
                        Box::pin(admitted.release()).await;
                        return Err(error);
                    }
                }
            }
            ToolKind::SwitchDomain => None,
        };
        admitted.note = note.take();
        admitted.effects = effects.take();
        admitted.context = context.take_set();
        // The transition's hooks, in the same transaction: one that fails fails the call,
        // and nothing of it commits.
        if hooked && let Err(error) = Box::pin(admitted.run_hooks(&transaction)).await {
            drop(Box::pin(transaction.take()).await);
            Box::pin(admitted.release()).await;
            return Err(error);
        }
        // (Boxed, and awaited only by a call that has one: every call's future would
        // carry it otherwise.)
        if tool.takes_transaction || hooked {
            admitted.transaction = Box::pin(transaction.take()).await;
        }
        let from = admitted.from.clone();
        let flow_id = admitted.flow.as_ref().map(|f| f.key.clone());
        let handle_id = admitted.flow.as_ref().and_then(|f| f.handle_id.clone());
        let focused = admitted.instance.as_ref().map(|i| (i.machine.id().to_string(), i.id.clone()));
        let instance_key = admitted.instance.as_ref().map(|i| i.key.clone());
        let switch = admitted.switch.as_ref().map(|s| s.domain.clone());
        // A call that writes nothing (a read) commits synchronously: the commit's future,
        // which holds the store's, is built (boxed) only for a call that writes.
        // The idempotency record goes into the handler's transaction, if there is one.
        let idempotency = admitted.transaction.as_ref().and(admitted.idempotency.clone());
        let Committed { flow_before, flow_after, to, transition, pending } =
            if admitted.writes() { Box::pin(admitted.commit()).await? } else { admitted.unchanged() };
        let flow_now = flow_after.as_ref().unwrap_or(&flow_before);
        let state = to.clone().or_else(|| from.clone());
        let previous_domain = flow_before.active_domain.as_deref();
        let (mut content, blocks) = self.result(
            tool,
            output,
            state.as_deref(),
            flow_now,
            session,
            principal,
            switch.as_deref(),
            previous_domain,
        );
        if let (Some(handle), Value::Object(fields)) =
            (handle_id.zip(flow_now.expires_at_ms.filter(|_| flow_now.version > 0)), &mut content)
        {
            let handle = self.flows.handle(&handle.0, handle.1, principal);
            fields.insert(self.flows.argument().into(), handle.into());
        }
        // Written in the handler's transaction: the idempotency record with the rest, and
        // then the whole committed, before anything is said of the call.
        let remembered = pending.is_some();
        if let Some(pending) = pending {
            let kept_blocks = blocks.as_ref().and_then(|blocks| serde_json::to_value(blocks).ok());
            let record = idempotency.map(|i| i.record_write(&content, kept_blocks));
            Box::pin(pending.finish(record)).await?;
        }
        let span = tracing::Span::current();
        if !span.is_disabled() {
            match (&focused, &flow_id) {
                (Some((_, id)), _) => span.record("instance", id.as_str()),
                (None, Some(flow)) => span.record("flow", tracing::field::display(FlowId::of(flow))),
                (None, None) => &span,
            };
            if let Some(from) = &from {
                span.record("from", from.as_str());
            }
            if let Some(to) = &to {
                span.record("to", to.as_str());
            }
        }
        if let (Some(machine), Some(event), Some(_)) = (tool.machine.as_deref(), tool.transition(), &to) {
            telemetry::record_transition(machine.id(), event);
        }
        if let (Some(machine), Some(transition)) = (tool.machine.as_deref(), transition)
            && !self.audit_sinks.is_empty()
        {
            let record = telemetry::AuditRecord {
                machine: machine.id().to_string(),
                instance: focused.as_ref().map(|(_, id)| id.clone()),
                flow: focused.is_none().then(|| flow_id.as_ref().map(|f| FlowId::of(f).to_string())).flatten(),
                transition,
            };
            for sink in &self.audit_sinks {
                sink.record(&record);
            }
        }
        // A transition on a keyed instance moved it for every session listing from it.
        let moved_instance = instance_key.filter(|_| to.is_some());

        // Where the session's focus moves, and whether what it lists changed.
        let moved =
            focused.zip(state.clone()).map(|((machine, instance), state)| (machine, FocusEntry { instance, state }));
        let focus_moved = match (session, moved) {
            (Some((focus, ticket)), Some((machine, entry))) => focus.move_to(&machine, entry, ticket),
            _ => None,
        };
        let listing_changed = match (session, focus_moved) {
            (Some(_), Some((before, after))) => {
                self.listing(&flow_before, &before, principal) != self.listing(flow_now, &after, principal)
            }
            (Some((focus, _)), None) if flow_after.is_some() || switch.is_some() => {
                let now = focus.current();
                self.listing(&flow_before, &now, principal) != self.listing(flow_now, &now, principal)
            }
            _ => false,
        };

        Ok(Done { content, blocks, listing_changed, moved: moved_instance, remembered })
    }
}

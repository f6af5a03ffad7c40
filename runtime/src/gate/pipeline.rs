//! The admission pipeline: every `tools/call` is judged here, by one sequence of steps,
//! each refusing before any later one runs. The order is the one a model learns most
//! from — a call that drifted into another domain hears *that*, not a list of fields to
//! fill in for a tool it must not call:
//!
//! 1. the tool exists (the caller looked it up: it holds a [`ToolEntry`]);
//! 2. [`Candidate::check_principal`] — an authenticated principal where the tool needs
//!    one, with every scope it requires;
//! 3. [`Candidate::identify_flow`] — the state handle, if one is given;
//! 4. [`Candidate::check_domain`] — the declared `domain` and the intent lock;
//! 5. [`Candidate::name_instance`] — the keyed instance: only its key field is read;
//! 6. [`Candidate::check_state`] — the state gate; then [`Candidate::check_not_held`] — a
//!    running MCP task holds the instance a changing call names (`TASK_RUNNING`);
//! 7. [`Candidate::check_arguments`] — every argument against the tool's schema; then
//!    [`Candidate::check_guards`] — the transition's guards, on the instance's data and the
//!    checked arguments: the first branch whose guard passes picks the target;
//! 8. [`Candidate::confirm`] — a one-time code bound to the call, for a `confirm`ed tool;
//! 9. [`Candidate::spend_allowance`] — the declared rate limit;
//! 10. [`Candidate::take_leases`] — the leases of what the call will write; steps 4, 6
//!     (the hold included) and 7½ are judged again on what is committed now, and a
//!     refusal here gives the allowance back; then [`Candidate::place_spend`] (10½) — where
//!     step 8's accepted code is spent;
//!
//! then the caller runs the handler (11) and [`Admitted::commit`]s (12): a transition on a
//! keyed instance is committed with its history entry, in one atomic step. Adding a check
//! is adding one step function and one line in [`admit`].
//!
//! Steps 4–6 first judge what is committed *without* a lease, so a call refused for its
//! domain or state never waits behind another call's lease; step 10 makes the decision
//! authoritative for calls that write: a call that writes a record holds that record's
//! lease from before it reads the record the last time until after it commits, so of two
//! such calls the second reads the first's committed state and is gated on it. (A call
//! that will write its instance, and no flow, tries that lease at step 5 with its read:
//! taken if free — one round trip instead of two, and the read already authoritative — and
//! else waited for at step 10, so it never waits before being judged.)

use serde_json::{Map, Value};

use super::admitted::Leases;
use super::guard_refusal;
use super::idempotency::Recalled;
use super::naming;
use super::{Admission, Admitted, Idempotency, Instance, Limiter, Requester, Spent};
use crate::action::RatePer;
use crate::auth::Principal;
use crate::confirm::{self, Accepted, Confirmations, Presented, Spend, Transaction};
use crate::domain::field;
use crate::domain::switch::SwitchRequest;
use crate::error::ToolError;
use crate::flow::{FlowRef, Origin};
use crate::fsm::{Caller, GuardRefusal};
use crate::records::Records;
use crate::registry::{Registry, ToolEntry, ToolKind};
use crate::store::{FlowLease, Snapshot, now_ms};
use crate::visibility::{Visibility, view};

/// What the pipeline judges a call with.
pub(crate) struct Judge<'a> {
    pub(crate) registry: &'a Registry,
    /// How confirmed tools are confirmed.
    pub(crate) confirmations: &'a Confirmations,
    /// The calling client, for a confirmation page offered by URL-mode elicitation.
    pub(crate) client: Option<&'a dyn crate::client::ClientLink>,
    pub(crate) records: Records<'a>,
    /// The tool's declared rate limit, if it has one.
    pub(crate) limiter: Option<&'a Limiter>,
}

/// A refused call: the error, with what the reply still needs to know.
pub(crate) struct Refused {
    pub(crate) error: ToolError,
    /// The call ran in a conversation that did not exist before it (no handle given).
    pub(crate) new_flow: bool,
    /// The flow's active domain, when the pipeline read it before refusing.
    pub(crate) active_domain: Option<String>,
}

/// A call on its way through the pipeline: what the steps so far established.
struct Candidate<'a> {
    judge: &'a Judge<'a>,
    tool: &'a ToolEntry,
    arguments: Map<String, Value>,
    flow: Option<FlowRef>,
    /// The flow as committed when last read.
    flow_before: Snapshot,
    /// The domain this call selects (lock on first use).
    selects: Option<String>,
    instance: Option<Instance<'a>>,
    instance_before: Option<Snapshot>,
    switch: Option<SwitchRequest>,
    /// The confirmation a confirming call presents (`challenge_id`, `otp`).
    presented: Option<Presented>,
    /// The challenge whose right code step 8 accepted, to be spent by the call's commit.
    accepted: Option<Accepted>,
    /// Where an idempotent call's result is kept.
    idempotency: Option<Idempotency>,
    /// Who is calling, when the request authenticated.
    principal: Option<Principal>,
    /// The branch the transition's guards picked, for a guarded transition.
    guarded_branch: Option<crate::fsm::Transition>,
    /// The instance's lease, when step 5 found it free and took it with its read, and that
    /// read as committed (before time settled it): step 10 then need not lease again.
    leased_early: Option<(FlowLease, Snapshot)>,
}

/// Judges a call to `tool` from `origin` by `caller`: admitted, with the leases it needs
/// held, or refused.
pub(crate) async fn admit<'a>(
    judge: &'a Judge<'a>,
    tool: &'a ToolEntry,
    origin: &Origin,
    caller: &Requester,
    arguments: Map<String, Value>,
) -> Result<Admission<'a>, Refused> {
    let mut call = Candidate {
        judge,
        tool,
        arguments,
        flow: None,
        flow_before: Snapshot::default(),
        selects: None,
        instance: None,
        instance_before: None,
        switch: None,
        presented: None,
        accepted: None,
        idempotency: None,
        principal: caller.principal.clone(),
        guarded_branch: None,
        leased_early: None,
    };
    // Each step refuses before any later one runs.
    let steps = async {
        call.check_principal()?;
        call.identify_flow(origin).await?;
        call.check_domain()?;
        call.name_instance().await?;
        if let Some(first) = call.recall().await? {
            return Ok(Some(first));
        }
        call.check_state()?;
        call.check_not_held().await?;
        call.check_arguments()?;
        call.check_guards()?;
        call.confirm().await?;
        Ok(None)
    };
    match steps.await {
        Ok(None) => {}
        Ok(Some(first)) => return Ok(Admission::Replay(first)),
        Err(error) => return Err(call.refused(error)),
    }
    let spent = match call.spend_allowance(caller).await {
        Ok(spent) => spent,
        Err(error) => return Err(call.refused(error)),
    };
    let leased = async {
        call.mint_instance().await?;
        let leases = call.take_leases().await?;
        // (Boxed, and built only for a confirmed call: every call's future would carry it.)
        let spend = match call.accepted.is_some() {
            true => Box::pin(call.place_spend(&leases)).await?,
            false => None,
        };
        Ok((spend, leases))
    };
    match leased.await {
        Ok((spend, leases)) => Ok(Admission::Run(call.admitted(leases, spent, spend))),
        Err(error) => {
            if let Some(spent) = spent {
                spent.refund().await;
            }
            Err(call.refused(error))
        }
    }
}

impl<'a> Candidate<'a> {
    /// What the call acts on, for the digests that bind a confirmation or an idempotent
    /// call to it: the instance's store key, else the flow's, else nothing.
    fn subject(&self) -> &str {
        match (&self.instance, &self.flow) {
            (Some(instance), _) => instance.key.as_str(),
            (None, Some(flow)) => flow.key.as_str(),
            (None, None) => "",
        }
    }

    /// Step 2: who is calling — a principal where the tool needs one (`transactional`, a
    /// `Principal` parameter, a scope), holding every scope the tool requires. Nothing in
    /// the arguments counts.
    fn check_principal(&self) -> Result<(), ToolError> {
        if !self.tool.needs_principal() {
            return Ok(());
        }
        let Some(principal) = &self.principal else { return Err(ToolError::unauthenticated(self.tool.name)) };
        match self.tool.missing_scope(principal) {
            Some(scope) => Err(ToolError::insufficient_scope(self.tool.name, scope)),
            None => Ok(()),
        }
    }

    /// Step 3: the flow the call runs in — its handle (verified, and naming a flow that
    /// still exists), else its connection, else a new one.
    async fn identify_flow(&mut self, origin: &Origin) -> Result<(), ToolError> {
        if !self.tool.needs_flow {
            return Ok(());
        }
        let flows = &self.judge.records.flows;
        // A keyed call with neither a handle nor a session belongs to no conversation: it
        // is judged on its instance, and starts none (which would write a flow per read).
        let outside_any = matches!(origin, Origin::Sessionless)
            && crate::flow::field::read(&self.arguments, flows.argument())?.is_none();
        if outside_any && self.tool.instance.is_some() && self.judge.registry.lock().admits_without_flow() {
            return Ok(());
        }
        let flow = flows.identify(origin, &self.arguments, self.principal.as_ref())?;
        self.flow_before = self.judge.records.load_flow(Some(&flow)).await?;
        self.flow = Some(flow);
        Ok(())
    }

    /// Step 4: the declared `domain` and the intent lock. A call that declares no domain
    /// (or not a string) is judged by its tool's domain here; the missing field itself is
    /// the argument check's to report, with every other bad field.
    fn check_domain(&mut self) -> Result<(), ToolError> {
        let Some(domain) = self.tool.domain else { return Ok(()) };
        let declared = match self.arguments.get(field::DOMAIN_FIELD) {
            Some(Value::String(declared)) => declared.as_str(),
            _ => domain,
        };
        self.selects = self.judge.registry.lock().check_call(self.tool.name, domain, declared, &self.flow_before)?;
        Ok(())
    }

    /// Step 5: the instance a keyed tool names — its key field alone is read, checked
    /// and canonicalized — and its committed state.
    /// A tenant-scoped or principal-owned machine's instance is in the caller's tenant
    /// (step 2 saw to it that there is a caller); a principal-owned one that is another
    /// principal's is judged after the load, with the same work, as a key never created.
    async fn name_instance(&mut self) -> Result<(), ToolError> {
        let (Some(key), Some(machine)) = (&self.tool.instance, self.tool.machine.as_deref()) else { return Ok(()) };
        let id = key.read(&mut self.arguments)?;
        let store_key = crate::visibility::instance_key(machine, &id, self.principal.as_ref());
        // What time has made due is applied to what the gate judges; a call that writes
        // commits it under the instance's lease (step 10). A call that will write the
        // instance (and no flow, whose lease comes first) takes that lease now if it is
        // free, with this read: one round trip, not two, and no wait.
        let before = if self.writes_instance() && !self.writes_flow_beside_instance() {
            let (loaded, lease) = self.judge.records.begin_if_free(&store_key).await?;
            self.leased_early = lease.map(|lease| (lease, loaded.clone()));
            loaded
        } else {
            self.judge.records.load(&store_key).await?
        };
        // A machine that mints its keys has only the instances its creating actions made:
        // a key never created names nothing (not an instance in the initial state); and
        // another principal's instance is, to this one, a key never created (for a machine
        // whose ids clients name, a taken id is refused the same way).
        let owned = crate::visibility::owner_rule_applies(machine, self.principal.as_ref());
        let hidden = before.hidden_from(owned, self.principal.as_ref());
        if hidden | (machine.mint().is_some() & (before.version == 0)) {
            return Err(naming::never_created(self.judge.registry, self.principal.as_ref(), machine, &id));
        }
        // A call that only reads commits what time made due (a writing call does, under
        // the lease it takes at step 10): the rows time's hooks write never lag what it reads.
        // (Boxed, and built only for an instance that is due: every call's future would
        // carry it otherwise.)
        let due = before.due_at_ms.is_some_and(|at| at <= now_ms());
        let before = match !self.writes_instance() && due {
            true => Box::pin(self.judge.records.commit_due(machine, &store_key, before)).await?,
            false => before,
        };
        let before = machine.settle(&before, now_ms()).map_or(before, |(settled, _)| settled);
        self.instance_before = Some(before);
        self.instance = Some(Instance { machine, id, key: store_key });
        Ok(())
    }

    /// Step 9½: a creating call's new instance, under a key the store mints (never one an
    /// instance already has — another principal's, or one made before the machine minted
    /// its keys): the next number of the machine's counter (per tenant for a tenant-scoped
    /// or principal-owned machine), or 128 random bits.
    async fn mint_instance(&mut self) -> Result<(), ToolError> {
        let Some(machine) = self.tool.machine.as_deref().filter(|_| self.tool.creates) else { return Ok(()) };
        let Some((format, mint)) = machine.minting() else { return Ok(()) };
        let (instance, before) =
            naming::mint(self.judge.records, machine, (format, mint), self.principal.as_ref()).await?;
        self.instance_before = Some(before);
        self.instance = Some(instance);
        Ok(())
    }

    /// Step 5½: an idempotent call's retry — the same key and arguments as a call that
    /// succeeded — gets that call's result before the state gate (the first call's
    /// transition may have made the tool unavailable since) and before any confirmation
    /// (the first call spent its code). The same key with other arguments is refused.
    async fn recall(&mut self) -> Result<Option<Recalled>, ToolError> {
        let (Some(argument), Some(principal)) = (self.tool.idempotency_key(), &self.principal) else { return Ok(None) };
        let subject = self.subject();
        let owned = [field::DOMAIN_FIELD, self.judge.records.flows.argument()];
        self.idempotency =
            super::idempotency::of_call(argument, principal, self.tool.name, subject, &self.arguments, &owned)?;
        match &self.idempotency {
            Some(idempotency) => idempotency.recall(self.judge.records.store, self.tool.name).await,
            None => Ok(None),
        }
    }

    /// Step 6: the state gate, on the instance's state laid over the flow.
    fn check_state(&self) -> Result<(), ToolError> {
        if self.tool.bind_states().is_empty() {
            return Ok(());
        }
        let instance_state = self.instance.as_ref().zip(self.instance_before.as_ref()).map(|(i, snapshot)| {
            let machine = i.machine;
            (machine.id(), snapshot.state_of(machine.id(), machine.initial()))
        });
        let view = view(&self.flow_before, instance_state);
        let admitted = Visibility::new(self.judge.registry, &view)
            .seen_by(self.principal.as_ref())
            .admit(self.tool, self.instance.as_ref().map(|i| i.id.as_str()));
        // Refused in a state time moved the instance to: say when (a quote that expired).
        let timed = self.instance.as_ref().and(self.instance_before.as_ref()).and_then(|s| s.timed_at_ms);
        admitted.map_err(|error| match timed {
            Some(at_ms) => error.with_expired_at(crate::store::rfc3339(at_ms)),
            None => error,
        })
    }

    /// Step 7: every argument against the tool's schema, every bad field at once. The
    /// fields toolgate owns (`domain`, the handle) are then taken out: the handler's type
    /// does not have them.
    fn check_arguments(&mut self) -> Result<(), ToolError> {
        match self.tool.kind {
            ToolKind::SwitchDomain => {
                self.switch = Some(self.judge.registry.lock().parse_switch(&self.arguments)?);
            }
            ToolKind::Action(_) => {
                if let Some(check) = &self.tool.arguments {
                    check.check_object(&mut self.arguments)?;
                }
            }
        }
        if self.tool.domain.is_some() {
            self.arguments.remove(field::DOMAIN_FIELD);
        }
        if self.tool.needs_flow {
            self.arguments.remove(self.judge.records.flows.argument());
        }
        if self.tool.confirm().is_some() {
            self.presented = confirm::take_presented(&mut self.arguments)?;
        }
        Ok(())
    }

    /// Step 7½: the guards of the call's transition, judged on the instance's data (its
    /// committed context) and the checked arguments. The first branch whose guard passes
    /// picks the target; when none passes, the first guard that refused says why
    /// (`GUARD_FAILED`). An unguarded transition has nothing to judge.
    fn check_guards(&mut self) -> Result<(), ToolError> {
        self.guarded_branch = None;
        let (Some(event), Some(machine)) = (self.tool.transition(), self.tool.machine.as_deref()) else {
            return Ok(());
        };
        let record = match (&self.instance, &self.instance_before) {
            (Some(_), Some(snapshot)) => snapshot,
            _ => &self.flow_before,
        };
        let from = record.state_of(machine.id(), machine.initial());
        if !machine.is_guarded(from, event) {
            return Ok(());
        }
        let context = self.instance.as_ref().and(record.context.as_ref());
        // The owner the instance's record keeps (none on a call that creates it).
        let owner = self.instance.as_ref().and(record.owner.as_deref());
        let caller = Caller::new(self.principal.as_ref(), owner);
        let GuardRefusal { guard, verdict } = match machine.choose(from, event, context, &self.arguments, &caller) {
            Ok(branch) => {
                self.guarded_branch = branch.cloned();
                return Ok(());
            }
            Err(refusal) => *refusal,
        };
        let instance = self.instance.as_ref().map(|i| i.id.clone());
        Err(guard_refusal::refused(GuardRefusal { guard, verdict }, self.tool.name, machine, from, instance))
    }

    /// Step 8: for a `confirm`ed tool (above its threshold, if it has one), a one-time code
    /// bound to exactly this call — principal, tool, instance or flow, canonical arguments:
    /// a new challenge (`CONFIRMATION_REQUIRED`), or the presented one checked. A right
    /// code is accepted, not spent: the call's commit spends it (step 10½).
    async fn confirm(&mut self) -> Result<(), ToolError> {
        let Some(policy) = self.tool.confirm() else { return Ok(()) };
        let presented = self.presented.take();
        if !policy.applies(&self.arguments) {
            return Ok(());
        }
        // Step 2 refused a confirmed tool's call without a principal.
        let Some(principal) = &self.principal else { return Err(ToolError::unauthenticated(self.tool.name)) };
        let subject = self.subject();
        let principal_key = principal.key();
        let transaction =
            Transaction { principal: &principal_key, tool: self.tool.name, subject, arguments: &self.arguments };
        let (judge, record) = (self.judge, self.subject_record());
        let judged =
            judge.confirmations.judge(judge.records.store, principal, &transaction, record, presented, judge.client);
        self.accepted = Some(judged.await?);
        Ok(())
    }

    /// The record of what the call acts on ([`Candidate::subject`]), as last read.
    fn subject_record(&self) -> &Snapshot {
        self.instance.as_ref().and(self.instance_before.as_ref()).unwrap_or(&self.flow_before)
    }

    /// Step 10½: where the accepted code is spent ([`confirm::place`]).
    async fn place_spend(&self, leases: &Leases) -> Result<Option<Spend>, ToolError> {
        let Some(accepted) = &self.accepted else { return Ok(None) };
        let instance = self.instance.as_ref().filter(|_| leases.instance.is_some()).map(|i| &i.key);
        let flow = self.flow.as_ref().filter(|_| leases.flow.is_some()).map(|f| &f.key);
        let (judge, record) = (self.judge, self.subject_record());
        confirm::place(judge.records.store, self.tool.name, accepted, [instance, flow], record).await
    }

    /// Step 9: the declared rate limit, counted per client, instance or tool — never per
    /// flow, which a client can mint at will — in the store (30 a minute is 30 a minute
    /// across every replica sharing it, and across a restart of a file store), or in this
    /// process for a store that keeps no windows.
    async fn spend_allowance(&self, caller: &Requester) -> Result<Option<Spent<'a>>, ToolError> {
        let Some(limiter) = self.judge.limiter else { return Ok(None) };
        let limit = limiter.limit();
        let key = match limit.per {
            RatePer::Client => caller.key(),
            RatePer::Instance => self.instance.as_ref().map_or("tool", |i| i.key.as_str()).into(),
            RatePer::Tool => "tool".into(),
        };
        limiter.admit_in(self.judge.records.store.capabilities().windows, self.tool.name, &key).await.map(Some)
    }

    /// Whether the call may write its flow — a conversation machine's transition, a domain
    /// it selects, `switch_domain` (even to the active domain: decided under the lease),
    /// or a handle flow's expiry to refresh — and so must hold its lease.
    /// ([`Admitted::writes`] decides, on what the lease guards, what the commit writes.)
    fn may_write_flow(&self) -> bool {
        let transition = self.tool.transition().is_some() && self.tool.machine.is_some();
        (transition && self.instance.is_none()) || self.writes_flow_beside_instance()
    }

    /// Whether a call naming an instance may still write its flow: what it selects or
    /// switches, or a handle's expiry to refresh.
    fn writes_flow_beside_instance(&self) -> bool {
        self.switch.is_some()
            || self.selects.is_some()
            || self.judge.records.needs_refresh(self.flow.as_ref(), &self.flow_before)
    }

    /// Whether the call may write its instance (and so holds its lease).
    fn writes_instance(&self) -> bool {
        (self.tool.transition().is_some() || self.tool.creates || self.tool.writes_context)
            && self.tool.machine.is_some()
    }

    /// Step 6½: a running MCP task holds the instance until it ends — a call that would
    /// change it is refused (`TASK_RUNNING`, naming the task) before its arguments are
    /// judged or a code is asked for, and judged again under the lease (step 10). Reads
    /// are not held.
    async fn check_not_held(&self) -> Result<(), ToolError> {
        match (&self.instance, &self.instance_before) {
            // Boxed, and built only for a marked instance: every call's future would
            // carry it otherwise.
            (Some(instance), Some(before)) if before.task.is_some() && self.writes_instance() => {
                Box::pin(crate::task::refuse_if_held(self.judge.records.store, before, &instance.id)).await
            }
            _ => Ok(()),
        }
    }

    /// Step 10: the leases of the records the call writes — the flow's before the
    /// instance's, always in that order — then steps 4 and 6 again, on what is committed
    /// now that nobody else can change it. (An instance's lease step 5 took is kept: what
    /// it read then is what is committed now.)
    async fn take_leases(&mut self) -> Result<Leases, ToolError> {
        let records = self.judge.records;
        let mut leases = Leases::default();
        if let (true, Some(flow)) = (self.may_write_flow(), &self.flow) {
            // Never the instance's lease before the flow's.
            self.leased_early = None;
            let (lease, loaded) = records.begin(&flow.key, "flow").await?;
            leases.flow = Some(lease);
            self.flow_before = records.flow_as_named(flow, loaded)?;
        }
        if let (true, Some(instance)) = (self.writes_instance(), &self.instance) {
            let (lease, loaded) = match self.leased_early.take() {
                Some(leased) => leased,
                None => match records.begin(&instance.key, "instance").await {
                    Ok(leased) => leased,
                    Err(busy) => {
                        return Err(naming::busy_or_hidden(
                            (records, self.judge.registry),
                            self.principal.as_ref(),
                            instance,
                            busy,
                        )
                        .await);
                    }
                },
            };
            // Created by another principal since step 5 read it free (an id clients name).
            let owned = crate::visibility::owner_rule_applies(instance.machine, self.principal.as_ref());
            if loaded.hidden_from(owned, self.principal.as_ref()) {
                let principal = self.principal.as_ref();
                return Err(naming::never_created(self.judge.registry, principal, instance.machine, &instance.id));
            }
            if loaded.task.is_some() {
                Box::pin(crate::task::refuse_if_held(records.store, &loaded, &instance.id)).await?;
            }
            self.instance_before = Some(records.settle(instance.machine, &instance.key, loaded, &lease).await?);
            leases.instance = Some(lease);
        }
        if leases.flow.is_some() || leases.instance.is_some() {
            self.check_domain()?;
            self.check_state()?;
            self.check_guards()?;
        }
        Ok(leases)
    }

    fn admitted(self, leases: Leases, spent: Option<Spent<'a>>, spend: Option<Spend>) -> Admitted<'a> {
        let Self {
            judge,
            tool,
            arguments,
            flow,
            flow_before,
            selects,
            instance,
            instance_before,
            switch,
            idempotency,
            principal,
            guarded_branch,
            ..
        } = self;
        let records = judge.records;
        let history = judge.registry.history();
        let refresh = leases.flow.is_some() && records.needs_refresh(flow.as_ref(), &flow_before);
        let from = tool.machine.as_deref().map(|machine| {
            let record = match (&instance, &instance_before) {
                (Some(_), Some(snapshot)) => snapshot,
                _ => &flow_before,
            };
            record.state_of(machine.id(), machine.initial()).to_string()
        });
        Admitted {
            records,
            tool,
            arguments,
            flow,
            instance,
            flow_before,
            instance_before,
            selects,
            refresh,
            switch,
            from,
            idempotency,
            principal,
            history,
            note: None,
            effects: Vec::new(),
            context: None,
            guarded_branch,
            task: None,
            transaction: None,
            leases,
            spend,
            _spent: spent,
        }
    }

    fn refused(&self, error: ToolError) -> Refused {
        let active = self.judge.registry.lock().active(&self.flow_before).map(str::to_string);
        Refused { error, new_flow: self.flow.as_ref().is_some_and(|f| f.is_new), active_domain: active }
    }
}

//! Step 12 of a call: [`Admitted::commit`] writes what the successful call changes — its
//! flow, its instance's state and context, the history entry, the owner of an instance it
//! creates, the effects it recorded — in the handler's transaction when it opened one, then settles
//! the leases.

use super::log::{CommitLog, SwitchLog, TransitionLog};
use super::pending::PendingCommit;
use crate::confirm::Spend;
use crate::error::ToolError;
use crate::gate::Admitted;
use crate::store::{HistoryEntry, Snapshot, Transition, now_ms};

/// What a commit wrote.
pub(crate) struct Committed {
    /// The flow as committed when the call was admitted.
    pub(crate) flow_before: Snapshot,
    /// The flow after the call, if the call wrote it.
    pub(crate) flow_after: Option<Snapshot>,
    /// The machine state the transition moved to, if it fired one.
    pub(crate) to: Option<String>,
    /// The transition it committed, as the instance's history (and the audit sinks) keep it.
    pub(crate) transition: Option<HistoryEntry>,
    /// For a call whose handler opened a transaction: the commit, written in it and not
    /// yet committed (the caller adds the idempotency record and finishes it).
    pub(crate) pending: Option<PendingCommit>,
}

impl Admitted<'_> {
    /// What a successful call that writes nothing "commits": nothing; its leases (it has
    /// none) and allowance are released.
    pub(crate) fn unchanged(self) -> Committed {
        Committed { flow_before: self.flow_before, flow_after: None, to: None, transition: None, pending: None }
    }

    /// Step 12: commits what the successful call changes — its transition, the domain it
    /// selects or switches to, its flow's refreshed expiry — then releases the leases. The
    /// flow is committed first, then the instance: should the second commit fail, the
    /// first (a domain selection, an expiry) is harmless on its own.
    pub(crate) async fn commit(mut self) -> Result<Committed, ToolError> {
        // With the handler's transaction, every write goes into it, committed at once.
        let transaction = self.transaction.take();
        let mut collected = transaction.as_ref().map(|_| Vec::new());
        let machine = self.tool.machine.as_deref();
        let to = self.target();
        let flow_transition = to.as_ref().filter(|_| self.instance.is_none());
        let switches = self.switch.as_ref().map(|s| s.domain.as_str());
        let switch_changes = self.switch_changes();
        let writes = self.writes_flow();
        // The code that confirmed the call, spent in the record it is bound to: in the same
        // compare-and-set as what the call changes there.
        let (spend_instance, spend_flow) = match self.spend.take() {
            Some(Spend::Instance(spent)) => (Some(spent), None),
            Some(Spend::Flow(spent)) => (None, Some(spent)),
            None => (None, None),
        };
        let flow_after = match &self.flow {
            Some(flow) if writes || spend_flow.is_some() => {
                let mut next = self.flow_before.next();
                if let Some(spent) = &spend_flow {
                    next.spend_challenge(spent, next.updated_at_ms);
                }
                if let (Some(to), Some(machine)) = (flow_transition, machine) {
                    next.states.insert(machine.id().to_string(), to.clone());
                }
                if let Some(domain) = self.selects.clone().or_else(|| switches.map(str::to_string)) {
                    next.active_domain = Some(domain);
                }
                let lease = self.leases.flow.as_ref();
                Some(self.records.write(&flow.key, &self.flow_before, next, lease, None, collected.as_mut()).await?)
            }
            _ => None,
        };
        // The context the handler set, committed with the transition, with the creation,
        // or on its own (an update, which fires no transition and so keeps no history).
        let context = self.context.clone().filter(|_| self.writes_context());
        // A fresh id per transitioning call: in the instance's history, the audit sinks and
        // the log line.
        // (A task's, its id: what tells, after its process stopped, whether it committed.)
        let call_id =
            to.as_ref().map(|_| self.task.clone().unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()));
        let entry = match (&to, self.tool.transition(), &self.from, &call_id) {
            (Some(to), Some(event), Some(from), Some(call_id)) => {
                let note = self.note.clone();
                let principal = self.principal.as_ref();
                let call_id = call_id.clone();
                let context_changed = context.is_some();
                let tool = self.tool.name;
                let transition = Transition { principal, from, to, event, tool, call_id, note, context_changed };
                let mut entry = HistoryEntry::new(transition, now_ms());
                if self.instance.as_ref().is_some_and(|i| self.history.keeps_data(i.machine.id())) {
                    entry.context = context.clone();
                }
                Some(entry)
            }
            _ => None,
        };
        // The effects the handler recorded, due now, each with its idempotency key: the
        // instance, this commit, and the effect's place in it.
        // (A transition's call id; a fresh one only for effects of a call that fires none.)
        let fresh = match (&call_id, self.effects.is_empty()) {
            (None, false) => uuid::Uuid::new_v4().simple().to_string(),
            _ => String::new(),
        };
        let commit_id = call_id.as_deref().unwrap_or(&fresh);
        let effects = match &self.instance {
            Some(instance) => crate::effect::recorded(&instance.key, commit_id, std::mem::take(&mut self.effects)),
            None => Vec::new(),
        };
        // A principal-owned instance is its creator's: the commit that creates it (from no
        // record) writes who owns it, and no later commit changes it (the gate let only
        // its owner this far).
        let owner = (self.instance.as_ref().zip(self.instance_before.as_ref()))
            .filter(|(instance, before)| instance.machine.is_principal_owned() && before.version == 0)
            .and_then(|_| self.principal.as_ref().map(crate::auth::Principal::owner_id));
        // Every commit of the instance ends a task's hold on it.
        let with_context = |mut next: Snapshot| {
            if let Some(context) = &context {
                next.context = Some(context.clone());
            }
            if owner.is_some() {
                next.owner.clone_from(&owner);
            }
            next.task = None;
            next.effects.extend(effects.iter().cloned());
            if let Some(spent) = &spend_instance {
                next.spend_challenge(spent, next.updated_at_ms);
            }
            next
        };
        if let (Some(instance), Some(before), Some(to), Some(entry)) =
            (&self.instance, &self.instance_before, &to, &entry)
        {
            let mut next = with_context(before.with_state(instance.machine.id(), to));
            if self.from.as_deref() != Some(to.as_str()) || self.reenters() {
                // A transition to the state it is in enters it again only with `reenter:
                // true` (XState v5); else the state's deadline stands, and no `exit` or
                // `entry` effect runs.
                let at = next.updated_at_ms;
                instance.machine.entered(&mut next, to, at);
                crate::effect::record_move(
                    instance.machine,
                    &instance.key,
                    self.from.as_deref(),
                    to,
                    commit_id,
                    &mut next,
                );
            }
            let lease = self.leases.instance.as_ref();
            let entry = Some((entry, self.history.retention));
            self.records.write(&instance.key, before, next, lease, entry, collected.as_mut()).await?;
        }
        if let (true, Some(instance), Some(before), Some(to)) =
            (self.tool.creates, &self.instance, &self.instance_before, &to)
        {
            // Created, under its minted key: a compare-and-set from "no record", so a key
            // that somehow names an instance already is never taken over.
            let mut next = with_context(before.with_state(instance.machine.id(), to));
            let at = next.updated_at_ms;
            instance.machine.entered(&mut next, to, at);
            crate::effect::record_move(instance.machine, &instance.key, None, to, commit_id, &mut next);
            let lease = self.leases.instance.as_ref();
            self.records.write(&instance.key, before, next, lease, None, collected.as_mut()).await?;
        }
        let held = self.held_instance().is_some();
        // A call whose handler wrote tables of yours commits the instance it read even when
        // it changes nothing of it: the version it read is checked (a call that lost a race
        // to a transition writes nothing), so the rows follow the state they were written for.
        let fenced = collected.is_some();
        if let (None, Some(instance), Some(before), true) = (
            &to,
            &self.instance,
            &self.instance_before,
            context.is_some() || held || fenced || !effects.is_empty() || spend_instance.is_some(),
        ) {
            let next = with_context(before.next());
            let lease = self.leases.instance.as_ref();
            self.records.write(&instance.key, before, next, lease, None, collected.as_mut()).await?;
        }
        let log = CommitLog {
            transition: to.as_ref().zip(machine).map(|(to, machine)| TransitionLog {
                tool: self.tool.name,
                on: self
                    .instance
                    .as_ref()
                    .map_or_else(|| self.flow.as_ref().map(|f| f.key.to_string()), |i| Some(i.key.to_string())),
                machine: machine.id().to_string(),
                from: self.from.clone(),
                to: to.clone(),
                call_id,
            }),
            switch: self.switch.as_ref().filter(|_| switch_changes).map(|switch| SwitchLog {
                flow: self.flow.as_ref().map(|f| f.key.to_string()),
                from: self.flow_before.active_domain.clone(),
                to: switch.domain.clone(),
                reason: switch.reason.clone(),
            }),
        };
        let pending = match transaction.zip(collected) {
            // Said once the handler's transaction commits, not before.
            Some((transaction, writes)) => {
                let leases = [self.leases.flow.take(), self.leases.instance.take()].into_iter().flatten().collect();
                Some(PendingCommit { transaction, writes, leases, log })
            }
            None => {
                log.emit();
                None
            }
        };
        Ok(Committed { flow_before: self.flow_before, flow_after, to, transition: entry, pending })
    }
}

//! Step 8 (the one-time code of a `confirm`ed tool) and step 10½ (where the code it
//! accepted is spent) of the pipeline.

use super::Candidate;
use crate::confirm::{self, Transaction};
use crate::error::ToolError;
use crate::gate::Spend;
use crate::gate::admitted::Leases;
use crate::store::{Snapshot, now_ms};

impl Candidate<'_> {
    /// Step 8: for a `confirm`ed tool (above its threshold, if it has one), a one-time code
    /// bound to exactly this call — principal, tool, instance or flow, canonical arguments:
    /// a new challenge (`CONFIRMATION_REQUIRED`), or the presented one checked (a wrong
    /// code counts now). A right code is accepted, not spent: the call's commit spends it
    /// ([`Candidate::place_spend`]). One a commit of the instance or flow already spent is
    /// refused here, before it is checked, as a challenge that is gone.
    pub(super) async fn confirm(&mut self) -> Result<(), ToolError> {
        let Some(policy) = self.tool.confirm() else { return Ok(()) };
        let presented = self.presented.take();
        if !policy.applies(&self.arguments) {
            return Ok(());
        }
        // Step 2 refused a confirmed tool's call without a principal.
        let Some(principal) = &self.principal else { return Err(ToolError::unauthenticated(self.tool.name)) };
        if let Some(presented) = &presented
            && self.subject_record().spent_challenge(&presented.challenge_id, now_ms())
        {
            return Err(confirm::gone(self.tool.name));
        }
        let subject = self.subject();
        let principal_key = principal.key();
        let transaction =
            Transaction { principal: &principal_key, tool: self.tool.name, subject, arguments: &self.arguments };
        let confirmations = self.judge.confirmations;
        let store = self.judge.records.store;
        self.accepted = Some(confirmations.judge(store, principal, &transaction, presented, self.judge.client).await?);
        Ok(())
    }

    /// The record of what the call acts on ([`Candidate::subject`]), as last read.
    fn subject_record(&self) -> &Snapshot {
        match (&self.instance, &self.instance_before) {
            (Some(_), Some(before)) => before,
            _ => &self.flow_before,
        }
    }

    /// Step 10½: where the accepted code is spent. In the commit of the record its
    /// challenge is bound to, when the call holds that record's lease — the instance's, or
    /// the flow's — so the code is consumed in the same compare-and-set as the transition
    /// it confirms, on every store: a call that never commits leaves it live, and of two
    /// calls presenting it the second reads, under the lease, that the first's commit spent
    /// it, and is refused before its handler runs. A call that holds no such lease (a
    /// creation under a minted key, a call that writes no record) has no commit to spend
    /// it in: it is spent on the challenge now, before the handler runs.
    pub(super) async fn place_spend(&self, leases: &Leases) -> Result<Option<Spend>, ToolError> {
        let Some(accepted) = &self.accepted else { return Ok(None) };
        let on_instance =
            self.instance.as_ref().filter(|i| leases.instance.is_some() && i.key.as_str() == accepted.subject);
        let on_flow = self.flow.as_ref().filter(|f| leases.flow.is_some() && f.key.as_str() == accepted.subject);
        let spend = match (on_instance, on_flow) {
            (Some(_), _) => Spend::Instance(accepted.spent()),
            (None, Some(_)) => Spend::Flow(accepted.spent()),
            (None, None) => {
                self.judge.confirmations.spend(self.judge.records.store, self.tool.name, accepted).await?;
                return Ok(None);
            }
        };
        // Read under the lease: authoritative.
        if self.subject_record().spent_challenge(&accepted.challenge_id, now_ms()) {
            return Err(confirm::gone(self.tool.name));
        }
        Ok(Some(spend))
    }
}

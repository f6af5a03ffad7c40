//! A call's transactional hooks ([`ServerBuilder::on_entry`](crate::ServerBuilder::on_entry)):
//! run after its handler, in the transaction the call commits in.

use crate::action::TransactionSlot;
use crate::error::ToolError;
use crate::gate::Admitted;
use crate::hook::{self, Moved};

impl Admitted<'_> {
    /// Whether the call may fire a transition of a machine with transactional hooks: it
    /// then commits in a transaction, opened for the hooks if its handler opened none.
    pub(crate) fn may_run_hooks(&self) -> bool {
        self.instance.as_ref().is_some_and(|i| self.records.hooks.has(i.machine.id()))
    }

    /// Runs the hooks of the transition the call fires (the `exit` hooks of the state it
    /// leaves, then the `entry` hooks of the state it enters; a creation's of the initial
    /// state) in the transaction of `slot`. None for a call that stays in its state
    /// without `reenter`, as for `entry`/`exit` effects.
    pub(crate) async fn run_hooks(&self, slot: &TransactionSlot) -> Result<(), ToolError> {
        let (Some(instance), Some(to)) = (&self.instance, self.target()) else { return Ok(()) };
        let from = if self.tool.creates { None } else { self.from.as_deref() };
        if from == Some(to.as_str()) && !self.reenters() {
            return Ok(());
        }
        let hooks = self.records.hooks.between(instance.machine.id(), from, &to);
        if hooks.is_empty() {
            return Ok(());
        }
        // A creation's owner is its creator (the commit writes it); else the record's.
        let owner = match (self.tool.creates && instance.machine.is_principal_owned(), &self.principal) {
            (true, Some(principal)) => Some(principal.owner_id()),
            _ => self.instance_before.as_ref().and_then(|before| before.owner.clone()),
        };
        let context = self.context.clone().or_else(|| self.committed_context());
        let principal = self.principal.clone();
        let moved = Moved::new(instance.machine, &instance.key, owner, (from, &to), principal, context);
        hook::run(&hooks, slot, &moved).await
    }
}

//! The mark a running MCP task leaves on the instance it holds ([`Admitted::hold_for_task`]),
//! and its removal when the task's call commits nothing ([`Admitted::release`]).

use crate::error::ToolError;
use crate::gate::Admitted;
use crate::store::Snapshot;

impl Admitted<'_> {
    /// Marks the instance as held by the task `id` that runs the call (which holds its
    /// lease until it ends): other calls that would change it are refused meanwhile with
    /// `TASK_RUNNING`, on every replica, and the commit that ends the call clears the
    /// mark. A call that creates its instance marks nothing: no other call can name an
    /// instance before it exists.
    pub(crate) async fn hold_for_task(&mut self, id: &str) -> Result<(), ToolError> {
        self.task = Some(id.to_string());
        let (Some(instance), Some(before), Some(lease)) =
            (&self.instance, &self.instance_before, self.leases.instance.as_ref())
        else {
            return Ok(());
        };
        if before.version == 0 {
            return Ok(());
        }
        let next = Snapshot { task: Some(id.to_string()), ..before.next() };
        self.instance_before = Some(self.records.commit(&instance.key, before, next, Some(lease)).await?);
        Ok(())
    }

    /// Ends a task's call that commits nothing (its handler failed, or it was cancelled):
    /// the instance it held is marked free again, unchanged otherwise.
    pub(crate) async fn release(self) {
        let (Some(instance), Some(before), Some(lease)) =
            (&self.instance, &self.instance_before, self.leases.instance.as_ref())
        else {
            return;
        };
        if before.task.is_none() || self.task.is_none() {
            return;
        }
        let next = Snapshot { task: None, ..before.next() };
        if let Err(error) = self.records.commit(&instance.key, before, next, Some(lease)).await {
            // The mark names a task that has ended: it holds nothing (`task::refuse_if_held`).
            tracing::warn!(instance = %instance.key, error = %error, "cannot clear a finished task's mark");
        }
    }
}

//! What a handler reaches of its instance's history: [`Ctx::history`] reads it,
//! [`Ctx::note`] attaches a reason to the transition the call fires. Here, beside
//! [`Ctx::server`](crate::Ctx::server), because both need the server serving the call (its
//! store, and the registry's note slots: `registry::InstanceHistory`).

use std::sync::Arc;

use super::Shared;
use crate::Ctx;
use crate::error::ToolError;
use crate::store::{HistoryEntry, StoreKey};

impl Ctx {
    /// The transitions of the instance the call names, oldest first (most recent last):
    /// who fired each, when, with which tool and event, from which state to which, and the
    /// note its handler attached. Another tenant's instance of the same id is another
    /// instance, with a history of its own. How much is kept:
    /// [`ServerBuilder::history_retention`](crate::ServerBuilder::history_retention).
    ///
    /// `INTERNAL` for a call that names no instance of a keyed machine, or on a store that
    /// keeps no history; `STORE_UNAVAILABLE` if the store cannot be read.
    ///
    /// ```no_run
    /// # use toolgate_runtime::{Ctx, ToolError};
    /// # async fn f(ctx: Ctx) -> Result<(), ToolError> {
    /// if let Some(last) = ctx.history().await?.last() {
    ///     // "…Z: `dave` called `invoice_reject` (REJECT), from `approved` to `draft`: amount mismatch"
    ///     println!("{}", last.summary());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn history(&self) -> Result<Vec<HistoryEntry>, ToolError> {
        let shared = self.shared().ok_or_else(|| ToolError::internal("the server of this call is gone"))?;
        let Some(key) = self.instance_key(&shared) else {
            return Err(ToolError::internal(format_args!(
                "`{}` called `Ctx::history`, but it names no instance of a keyed machine",
                self.tool
            )));
        };
        match shared.store.history(&key).await {
            Ok(Some(entries)) => Ok(entries),
            Ok(None) => Err(ToolError::internal("the server's store keeps no history of instances")),
            Err(error) => Err(ToolError::store_unavailable(error, 1_000)),
        }
    }

    /// Attaches a short reason (`"amount mismatch"`) to the transition this call fires:
    /// its history entry carries it, and the machine's history tool shows it. The last
    /// note made counts; one longer than [`MAX_NOTE_CHARS`](crate::store::MAX_NOTE_CHARS)
    /// characters is cut. Nothing is recorded if the call fires no transition on an
    /// instance, or fails (a failed call commits nothing).
    pub fn note(&self, note: impl Into<String>) {
        let fires = self.shared().is_some_and(|shared| {
            let transitions = shared.registry.tool(self.tool).is_some_and(|tool| tool.transition().is_some());
            transitions && self.instance_key(&shared).is_some()
        });
        if fires {
            self.note.set(note.into());
        } else {
            tracing::debug!(tool = self.tool, "a note was not recorded: the call fires no transition on an instance");
        }
    }

    /// The server serving the call, while it runs.
    fn shared(&self) -> Option<Arc<Shared>> {
        self.server.upgrade()?.downcast::<Shared>().ok()
    }

    /// Where the instance the call names lives, if it names one.
    fn instance_key(&self, shared: &Shared) -> Option<StoreKey> {
        let machine = shared.registry.tool(self.tool)?.machine.as_deref().filter(|m| m.key().is_some())?;
        Some(crate::gate::instance_key(machine, self.instance.as_deref()?, self.principal.as_ref()))
    }
}

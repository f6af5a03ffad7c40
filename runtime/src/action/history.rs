//! What a handler reaches of its instance's history: [`Ctx::history`] reads it,
//! [`Ctx::note`] attaches a reason to the transition the call fires. Both reach the engine
//! running the call through [`CallEngine`].

use super::{CallEngine, Ctx};
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
        let engine = self.engine.upgrade().ok_or_else(|| ToolError::internal("the server of this call is gone"))?;
        let Some((key, owned)) = self.instance_key(engine.as_ref()) else {
            return Err(ToolError::internal(format_args!(
                "`{}` called `Ctx::history`, but it names no instance of a keyed machine",
                self.tool
            )));
        };
        let store = engine.store();
        // Another principal's instance (created since the gate found the id free) has, to
        // this caller, the history of an id never moved.
        if owned {
            let snapshot = store.load(&key).await.map_err(|error| ToolError::store_unavailable(error, 1_000))?;
            if snapshot.hidden_from(owned, self.principal.as_ref()) {
                return Ok(Vec::new());
            }
        }
        let Some(histories) = store.capabilities().history else {
            return Err(ToolError::internal("the server's store keeps no history of instances"));
        };
        histories.history(&key).await.map_err(|error| ToolError::store_unavailable(error, 1_000))
    }

    /// Attaches a short reason (`"amount mismatch"`) to the transition this call fires:
    /// its history entry carries it, and the machine's history tool shows it. The last
    /// note made counts; one longer than [`MAX_NOTE_CHARS`](crate::store::MAX_NOTE_CHARS)
    /// characters is cut. Nothing is recorded if the call fires no transition on an
    /// instance, or fails (a failed call commits nothing).
    pub fn note(&self, note: impl Into<String>) {
        let fires = self
            .engine
            .upgrade()
            .is_some_and(|engine| engine.transitions(self.tool) && self.instance_key(engine.as_ref()).is_some());
        if fires {
            self.note.set(note.into());
        } else {
            tracing::debug!(tool = self.tool, "a note was not recorded: the call fires no transition on an instance");
        }
    }

    /// Records the effect `name` with `input`, to be dispatched once this call's commit is
    /// made: in the same commit as the call's change to its instance (its transition, its
    /// creation, its context), so it happens if and only if that change does — a refused
    /// or failed call causes nothing. It is then run at least once, each attempt with the
    /// same idempotency key, retried with backoff, and dead-lettered after the last
    /// attempt (see [`effect`](crate::effect)).
    ///
    /// `INTERNAL` (a server bug, reported before anything commits) when no effect is
    /// registered as `name` ([`ServerBuilder::effect`](crate::ServerBuilder::effect)),
    /// when the call names no instance, or when `input` does not serialize.
    pub fn effect<T: serde::Serialize>(&self, name: &str, input: &T) -> Result<(), crate::ToolError> {
        let engine = self.engine.upgrade().ok_or_else(|| crate::ToolError::internal("the server has stopped"))?;
        if !engine.has_effect(name) {
            return Err(crate::ToolError::internal(format_args!("no effect is registered as `{name}`")));
        }
        if self.instance_key(engine.as_ref()).is_none() {
            return Err(crate::ToolError::internal(format_args!(
                "effect `{name}`: `{}` names no instance to record it with",
                self.tool
            )));
        }
        let input = serde_json::to_value(input)
            .map_err(|_| crate::ToolError::internal(format_args!("the input of effect `{name}` does not serialize")))?;
        self.effects.push(name.to_string(), input);
        Ok(())
    }

    /// What the instance the call names is going through, from one read of it: the MCP
    /// task holding it, and the effects its commits recorded that are not done. Empty when
    /// the call names no instance of a keyed machine.
    pub(crate) async fn instance_now(&self) -> InstanceNow {
        let Some(engine) = self.engine.upgrade() else { return InstanceNow::default() };
        let Some((key, owned)) = self.instance_key(engine.as_ref()) else { return InstanceNow::default() };
        let store = engine.store();
        let Ok(snapshot) = store.load(&key).await else { return InstanceNow::default() };
        if snapshot.hidden_from(owned, self.principal.as_ref()) {
            return InstanceNow::default();
        }
        let running_task = crate::task::holder(store.as_ref(), &snapshot)
            .await
            .map(|(id, task)| (id, task.tool, crate::store::rfc3339(task.created_at_ms)));
        InstanceNow { running_task, pending_effects: snapshot.effects, dead_effects: snapshot.dead_effects }
    }

    /// Where the instance the call names lives, if it names one, and whether its machine
    /// is principal-owned.
    fn instance_key(&self, engine: &dyn CallEngine) -> Option<(StoreKey, bool)> {
        engine.instance_key(self.tool, self.instance.as_deref()?, self.principal.as_ref())
    }
}

/// What an instance is going through ([`Ctx::instance_now`]).
#[derive(Default)]
pub(crate) struct InstanceNow {
    /// The MCP task holding it: its id, its tool and when it started (RFC 3339).
    pub(crate) running_task: Option<(String, String, String)>,
    /// Effects still to be dispatched, or tried again after a failed attempt.
    pub(crate) pending_effects: Vec<crate::store::PendingEffect>,
    /// Effects dead-lettered after their last attempt.
    pub(crate) dead_effects: Vec<crate::store::PendingEffect>,
}

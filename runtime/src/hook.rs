//! Transactional hooks: functions a state runs in the commit of every transition that enters
//! or leaves it — by a call, by time (`after`), by a task's end — with the
//! [`Transaction`](crate::Transaction) the transition commits in, so that the business's
//! rows follow the state ("the report expired by time says `expired`").
//!
//! Hooks are not effects. A hook runs inside the transition's commit, and the transition
//! commits with what it wrote or not at all; an effect (`entry:`/`exit:` in the machine)
//! runs after the commit, at least once, and may call the world.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::Transaction;
use crate::action::BoxFuture;
use crate::action::TransactionSlot;
use crate::auth::Principal;
use crate::error::ToolError;

/// A transition of one instance, as a transactional hook sees it
/// ([`ServerBuilder::on_entry`](crate::ServerBuilder::on_entry), [`ServerBuilder::on_exit`](crate::ServerBuilder::on_exit)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Moved {
    /// The machine (`"expense"`).
    pub machine: String,
    /// The instance's id (`"E-7"`): its key field's value.
    pub instance: String,
    /// The tenant the instance is in, for a tenant-scoped or principal-owned machine.
    pub tenant: Option<String>,
    /// Who owns it, on a principal-owned machine: [`Principal::owner_id`] of its creator.
    pub owner: Option<String>,
    /// The state it leaves (`None`: it is being created).
    pub from: Option<String>,
    /// The state it enters.
    pub to: String,
    /// Who moved it: the calling principal; `None` for time (`after`), or a server that
    /// authenticates nobody.
    pub principal: Option<Principal>,
    /// Its context as the transition commits it.
    pub context: Option<Value>,
}

/// A transactional hook, erased: `async fn(Transaction, Moved) -> Result<(), ToolError>`.
pub(crate) type HookFn = dyn Fn(Transaction, Moved) -> BoxFuture<Result<(), ToolError>> + Send + Sync;

/// Where in a transition a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookPoint {
    /// As the instance enters the state.
    Entry,
    /// As it leaves it.
    Exit,
}

/// One hook of one state.
#[derive(Clone)]
pub(crate) struct Hook {
    pub(crate) state: String,
    pub(crate) point: HookPoint,
    pub(crate) run: Arc<HookFn>,
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hook").field("state", &self.state).field("point", &self.point).finish_non_exhaustive()
    }
}

impl PartialEq for Hook {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state && self.point == other.point && Arc::ptr_eq(&self.run, &other.run)
    }
}

impl Eq for Hook {}

/// A hook as the builder is given it, for the machine and state it names.
#[derive(Clone, Debug)]
pub(crate) struct HookRegistration {
    pub(crate) machine: String,
    pub(crate) hook: Hook,
}

impl HookRegistration {
    /// `hook`, run at `point` of `machine`'s `state`.
    pub(crate) fn new<F, Fut>(machine: &str, state: &str, point: HookPoint, hook: F) -> Self
    where
        F: Fn(Transaction, Moved) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        let run: Arc<HookFn> = Arc::new(move |transaction, moved| Box::pin(hook(transaction, moved)));
        Self { machine: machine.to_string(), hook: Hook { state: state.to_string(), point, run } }
    }
}

/// The transactional hooks of a server's machines, by machine, in the order given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hooks {
    by_machine: BTreeMap<String, Vec<Hook>>,
}

impl Hooks {
    /// Adds `hook` to `machine`'s.
    pub(crate) fn add(&mut self, machine: &str, hook: Hook) {
        self.by_machine.entry(machine.to_string()).or_default().push(hook);
    }

    /// Whether any state of `machine` has a hook.
    pub(crate) fn has(&self, machine: &str) -> bool {
        self.by_machine.contains_key(machine)
    }

    /// The machines with hooks.
    pub(crate) fn machines(&self) -> impl Iterator<Item = &str> {
        self.by_machine.keys().map(String::as_str)
    }

    /// The hooks a transition of `machine` from `from` (`None`: a creation) to `to` runs, in
    /// order: the `exit` hooks of `from`, then the `entry` hooks of `to`.
    pub(crate) fn between(&self, machine: &str, from: Option<&str>, to: &str) -> Vec<&Hook> {
        let Some(hooks) = self.by_machine.get(machine) else { return Vec::new() };
        let at = |point: HookPoint, state: Option<&str>| {
            hooks.iter().filter(|h| h.point == point && Some(h.state.as_str()) == state).collect::<Vec<_>>()
        };
        let mut between = at(HookPoint::Exit, from);
        between.extend(at(HookPoint::Entry, Some(to)));
        between
    }
}

/// Runs `hooks` in order for `moved`, in the transaction of `slot`: the first that fails
/// stops the rest, and the transition does not commit.
pub(crate) async fn run(hooks: &[&Hook], slot: &TransactionSlot, moved: &Moved) -> Result<(), ToolError> {
    for hook in hooks {
        (hook.run)(Transaction::over(slot.clone()), moved.clone()).await?;
    }
    Ok(())
}

impl Moved {
    /// The transition of `machine`'s instance at `key` from `from` to `to`.
    pub(crate) fn new(
        machine: &crate::Machine,
        key: &crate::store::StoreKey,
        owner: Option<String>,
        (from, to): (Option<&str>, &str),
        principal: Option<Principal>,
        context: Option<Value>,
    ) -> Self {
        let (tenant, _, id) = key.instance_parts().unwrap_or((None, machine.id(), ""));
        Self {
            machine: machine.id().to_string(),
            instance: id.to_string(),
            // The default tenant (a principal without one) is no tenant.
            tenant: tenant.filter(|t| !t.is_empty()).map(str::to_string),
            owner,
            from: from.map(str::to_string),
            to: to.to_string(),
            principal,
            context,
        }
    }
}

//! What the pipeline lets through ([`Admission`]): an [`Admitted`] call — what it read,
//! what its commit will write, and the leases that keep both still meanwhile — or an
//! idempotent retry's first result. The commit itself is `commit/`'s.

use serde_json::{Map, Value};

use super::idempotency::Recalled;
use super::{Idempotency, Spent};
use crate::auth::Principal;
use crate::domain::switch::SwitchRequest;
use crate::flow::FlowRef;
use crate::fsm::Machine;
use crate::records::Records;
use crate::registry::{InstanceHistory, ToolEntry};
use crate::store::{FlowLease, Snapshot, StoreKey, StoreTransaction};

/// The keyed machine's instance a call names.
pub(crate) struct Instance<'a> {
    pub(crate) machine: &'a Machine,
    /// The key's canonical value (`INV-7`).
    pub(crate) id: String,
    pub(crate) key: StoreKey,
}

/// What the pipeline lets through: a call to run, or an idempotent retry answered with
/// the first call's result.
// Not boxed: every call would pay an allocation so that the rare replay moves fewer bytes.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Admission<'a> {
    /// Run the handler, then commit.
    Run(Admitted<'a>),
    /// The first result of this idempotent call; nothing runs.
    Replay(Recalled),
}

/// The leases an admitted call holds until it commits or is dropped.
#[derive(Default)]
pub(crate) struct Leases {
    pub(crate) flow: Option<FlowLease>,
    pub(crate) instance: Option<FlowLease>,
}

/// A call allowed to run: what it read, what its commit will write, and the leases that
/// keep both still meanwhile.
pub(crate) struct Admitted<'a> {
    pub(crate) records: Records<'a>,
    pub(crate) tool: &'a ToolEntry,
    /// The arguments the handler receives: checked, with toolgate's own fields taken out
    /// and the instance key canonical.
    pub(crate) arguments: Map<String, Value>,
    pub(crate) flow: Option<FlowRef>,
    pub(crate) instance: Option<Instance<'a>>,
    /// The flow as committed when the call was admitted.
    pub(crate) flow_before: Snapshot,
    pub(crate) instance_before: Option<Snapshot>,
    pub(crate) selects: Option<String>,
    /// The flow's expiry needs refreshing.
    pub(crate) refresh: bool,
    /// What `switch_domain` asked for.
    pub(crate) switch: Option<SwitchRequest>,
    /// The state of the tool's machine (its instance's, for a keyed machine).
    pub(crate) from: Option<String>,
    /// Where an idempotent call keeps its result for its retries.
    pub(crate) idempotency: Option<Idempotency>,
    /// Who is calling, for the history entry of the transition.
    pub(crate) principal: Option<Principal>,
    pub(crate) history: &'a InstanceHistory,
    /// The note the handler attached to the instance's transition
    /// ([`Ctx::note`](crate::Ctx::note)), set once it returned.
    pub(crate) note: Option<String>,
    /// The effects the handler recorded (name, input), committed with the instance.
    pub(crate) effects: Vec<(String, Value)>,
    /// The context the handler set for the instance ([`InstanceMut::set`](crate::InstanceMut::set)),
    /// set once it returned: committed with the call.
    pub(crate) context: Option<Value>,
    /// The branch the transition's guards picked, for a guarded transition.
    pub(crate) guarded_branch: Option<crate::fsm::Transition>,
    /// The MCP task the call runs as, once it holds its instance: the id names the
    /// transition in the instance's history.
    pub(crate) task: Option<String>,
    /// The transaction the handler opened ([`Transaction`](crate::Transaction)), set once
    /// it returned: the commit writes the call's records in it.
    pub(crate) transaction: Option<Box<dyn StoreTransaction>>,
    pub(crate) leases: Leases,
    /// Where the commit spends the code that confirmed the call, if one did and the call
    /// holds the lease of the record its challenge is bound to.
    pub(crate) spend: Option<crate::confirm::Spend>,
    /// The allowance the call spent: it counts whatever the handler does.
    pub(super) _spent: Option<Spent<'a>>,
}

//! An instance's data: the context a keyed machine declares (`machine! { context: Payment,
//! … }`), which a handler reads through [`Instance<T>`] and changes through
//! [`InstanceMut<T>`]. The context is committed with the call's transition, in the same
//! compare-and-set, in every store; a call that is refused or fails changes nothing.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ContextRequirement, ContextSlot, Ctx, FromCtx};
use crate::error::ToolError;
use crate::fsm::ContextType;

/// What a machine's `context` type must be: stored as JSON and read back, so it
/// serializes and deserializes (serde), and it crosses tasks. Every such type is one; a
/// `machine!` whose context is not says so at the type.
pub trait InstanceContext: Serialize + DeserializeOwned + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> InstanceContext for T {}

/// The default bound on one instance's context, serialized: 64 KiB.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 64 * 1024;

/// The context of the instance a call acts on, as committed when the call was admitted:
/// a handler parameter for an action of a keyed machine that declares `context: T`.
///
/// [`Instance::get`] is `None` until a call sets it (see [`InstanceMut`]). A stored context
/// that no longer reads as `T` (the type changed incompatibly) refuses the call with
/// `CONTEXT_UNREADABLE`, naming the instance; add fields with `#[serde(default)]` so that
/// older contexts still read.
///
/// ```no_run
/// # use toolgate_runtime::{Instance, ToolError};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Payment { captured: u64 }
/// # async fn f(payment: Instance<Payment>) -> Result<(), ToolError> {
/// let captured = payment.get().map_or(0, |p| p.captured);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Instance<T> {
    value: Option<T>,
}

impl<T> Instance<T> {
    /// The committed context, if the instance has one.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// The committed context, owned.
    pub fn into_inner(self) -> Option<T> {
        self.value
    }
}

impl<T: InstanceContext> FromCtx for Instance<T> {
    const CONTEXT: Option<ContextRequirement> = Some(ContextRequirement { ty: ContextType::of::<T>(), writes: false });

    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(Self { value: ctx.context.committed(ContextType::of::<T>())? })
    }
}

/// [`Instance`], and the right to change it: what [`InstanceMut::set`] sets is committed
/// with the call — with its transition, or on its own for an action that fires none (an
/// update, bound to states) — in the same compare-and-set as the state. A call that takes
/// one holds its instance's lease from admission to commit, as a transition does.
///
/// A context larger than the server's bound ([`ServerBuilder::max_context_bytes`](crate::ServerBuilder::max_context_bytes))
/// is refused by `set` with `CONTEXT_TOO_LARGE`; a handler that returns an error commits
/// nothing it set.
#[derive(Debug)]
pub struct InstanceMut<T> {
    value: Option<T>,
    slot: ContextSlot,
}

impl<T: Serialize> InstanceMut<T> {
    /// The committed context, if the instance has one.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// Sets the context the call commits (the last `set` counts); on an error
    /// (`CONTEXT_TOO_LARGE`), nothing is set and [`InstanceMut::get`] is unchanged.
    pub fn set(&mut self, value: T) -> Result<(), ToolError> {
        self.slot.set(&value)?;
        self.value = Some(value);
        Ok(())
    }

    /// Changes a copy of the context (or `T::default()` if there is none yet) with `f`,
    /// and sets it; on an error, the context stays as it was.
    pub fn update(&mut self, f: impl FnOnce(&mut T)) -> Result<(), ToolError>
    where
        T: Default + Clone,
    {
        let mut value = self.value.clone().unwrap_or_default();
        f(&mut value);
        self.set(value)
    }
}

impl<T: InstanceContext> FromCtx for InstanceMut<T> {
    const CONTEXT: Option<ContextRequirement> = Some(ContextRequirement { ty: ContextType::of::<T>(), writes: true });

    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(Self { value: ctx.context.committed(ContextType::of::<T>())?, slot: ctx.context.clone() })
    }
}

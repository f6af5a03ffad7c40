//! An instance's data: the context a keyed machine declares (`machine! { context: Payment,
//! … }`), which a handler reads through [`Instance<T>`] and changes through
//! [`InstanceMut<T>`]. The context is committed with the call's transition, in the same
//! compare-and-set, in every store; a call that is refused or fails changes nothing.

use std::any::TypeId;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Ctx, FromCtx};
use crate::error::ToolError;

/// What a machine's `context` type must be: stored as JSON and read back, so it
/// serializes and deserializes (serde), and it crosses tasks. Every such type is one; a
/// `machine!` whose context is not says so at the type.
pub trait InstanceContext: Serialize + DeserializeOwned + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> InstanceContext for T {}

/// The default bound on one instance's context, serialized: 64 KiB.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 64 * 1024;

/// The Rust type of a machine's context, as `machine!` records it (generated code only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ContextType {
    /// `TypeId::of::<T>`.
    pub id: fn() -> TypeId,
    /// `type_name::<T>`, for messages.
    pub name: fn() -> &'static str,
}

impl ContextType {
    /// The context type `T`.
    pub const fn of<T: 'static>() -> Self {
        Self { id: TypeId::of::<T>, name: std::any::type_name::<T> }
    }

    /// The type's name as written, without its module path (`Payment`).
    pub(crate) fn short_name(&self) -> &'static str {
        let name = (self.name)();
        let plain = name.split('<').next().unwrap_or(name);
        plain.rsplit("::").next().unwrap_or(plain)
    }
}

impl PartialEq for ContextType {
    fn eq(&self, other: &Self) -> bool {
        (self.id)() == (other.id)()
    }
}

impl Eq for ContextType {}

/// What an `Instance<T>` or `InstanceMut<T>` parameter needs, as the action's
/// registration records it: the machine's context must be `T` (checked at start-up), and
/// `writes` makes the call hold its instance's lease and commit it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ContextRequirement {
    /// The context type the parameter reads.
    pub ty: ContextType,
    /// `InstanceMut<T>`: the call may change the context.
    pub writes: bool,
}

/// A call's view of its instance's context: what was committed when it was admitted (read
/// under the instance's lease for a call that writes), and what the handler set.
#[derive(Debug, Clone, Default)]
pub(crate) struct ContextSlot(Arc<Mutex<ContextCell>>);

#[derive(Debug, Default)]
struct ContextCell {
    /// The instance the call names and its machine, for messages.
    instance: Option<(String, String)>,
    committed: Option<Arc<Value>>,
    set: Option<Value>,
    max_bytes: usize,
}

impl ContextSlot {
    /// The slot of a call on `instance` of `machine`, whose committed context is
    /// `committed`, allowed `max_bytes` serialized.
    pub(crate) fn new(machine: &str, instance: &str, committed: Option<Value>, max_bytes: usize) -> Self {
        let cell = ContextCell {
            instance: Some((machine.to_string(), instance.to_string())),
            committed: committed.map(Arc::new),
            set: None,
            max_bytes,
        };
        Self(Arc::new(Mutex::new(cell)))
    }

    fn cell(&self) -> std::sync::MutexGuard<'_, ContextCell> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The context the handler set, for the commit.
    pub(crate) fn take_set(&self) -> Option<Value> {
        self.cell().set.take()
    }

    fn committed<T: DeserializeOwned>(&self, ty: ContextType) -> Result<Option<T>, ToolError> {
        let cell = self.cell();
        let Some((machine, instance)) = cell.instance.clone() else {
            return Err(ToolError::internal("this call names no instance with a context"));
        };
        let Some(value) = cell.committed.clone() else { return Ok(None) };
        drop(cell);
        T::deserialize(&*value).map(Some).map_err(|error| {
            // The reason is for the operator's log; the caller hears which instance and type.
            tracing::warn!(%error, machine, instance, ty = (ty.name)(), "an instance's context no longer reads");
            ToolError::context_unreadable(&machine, &instance, ty.short_name())
        })
    }

    fn set<T: Serialize>(&self, value: &T) -> Result<(), ToolError> {
        let value = serde_json::to_value(value)
            .map_err(|_| ToolError::internal("the new context of the instance could not be serialized"))?;
        let mut cell = self.cell();
        let size = serialized_size(&value);
        if size > cell.max_bytes {
            let instance = cell.instance.as_ref().map(|(_, id)| id.clone()).unwrap_or_default();
            return Err(ToolError::context_too_large(&instance, size, cell.max_bytes));
        }
        cell.set = Some(value);
        Ok(())
    }
}

/// How many bytes `value` takes as JSON, counted without keeping them.
fn serialized_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

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

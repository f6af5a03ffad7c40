//! [`ContextSlot`]: what a call holds of its instance's context between admission and
//! commit — what was committed, and what the handler set — which [`Instance`](super::Instance)
//! and [`InstanceMut`](super::InstanceMut) read and write, and the commit takes.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::fsm::ContextType;

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

    pub(super) fn committed<T: DeserializeOwned>(&self, ty: ContextType) -> Result<Option<T>, ToolError> {
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

    pub(super) fn set<T: Serialize>(&self, value: &T) -> Result<(), ToolError> {
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

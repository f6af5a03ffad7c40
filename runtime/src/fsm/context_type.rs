//! [`ContextType`]: the Rust type of a machine's instances' data, as `machine!` records it,
//! so that start-up can check every `Instance<T>` parameter against it.

use std::any::TypeId;

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

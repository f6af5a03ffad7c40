//! Application state: values a server is given once (a database pool, an HTTP client,
//! configuration) and handlers receive as `State<T>` parameters, in the style of axum.

use std::any::TypeId;

pub use crate::app_state::State;
pub(crate) use crate::app_state::States;

/// One `State<T>` a handler asks for, as its registration records it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct StateRequirement {
    /// `TypeId::of::<T>`.
    pub id: fn() -> TypeId,
    /// `type_name::<T>`, for the start-up message.
    pub name: fn() -> &'static str,
}

impl StateRequirement {
    /// The requirement of a `State<T>` parameter.
    pub const fn of<T: 'static>() -> Self {
        Self { id: TypeId::of::<T>, name: std::any::type_name::<T> }
    }
}

//! Application state: values a server is given once (a database pool, an HTTP client,
//! configuration) that handlers receive as `State<T>` parameters, in the style of axum, and
//! effects read with [`EffectCall::state`](crate::effect::EffectCall::state). A leaf: both
//! `action/` and `effect/` read it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// A handler parameter that receives the application state of type `T` the server was
/// given with `ServerBuilder::state`. A server whose handlers ask for a type it was not
/// given refuses to start, naming the handler and the type.
///
/// The `toolgate` crate's documentation ("Application state") has a whole example.
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T> std::ops::Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The application states a server was given, by type.
#[derive(Clone, Default)]
pub(crate) struct States(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl States {
    /// Adds (or replaces) the state of type `T`.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.0).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Whether a state of this type is held.
    pub(crate) fn contains(&self, id: TypeId) -> bool {
        self.0.contains_key(&id)
    }

    /// A clone of the state of type `T`.
    pub(crate) fn get<T: Clone + 'static>(&self) -> Option<T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref::<T>().cloned()
    }
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "States({} types)", self.0.len())
    }
}

//! [`CallEngine`]: what a handler's [`Ctx`](super::Ctx) reaches of the engine running its
//! call, which the engine implements (a trait here keeps `action/` below `engine/`, which
//! runs handlers).

use std::sync::Arc;

use crate::auth::Principal;
use crate::store::{FlowStore, StoreKey};

/// What a handler's [`Ctx`] reaches of the engine running its call.
pub(crate) trait CallEngine: Send + Sync {
    /// The store the engine commits to.
    fn store(&self) -> Arc<dyn FlowStore>;
    /// Where the instance of `tool`'s keyed machine named `instance` lives, for
    /// `principal`, and whether the machine is principal-owned (what is read there is
    /// judged by its owner); `None` if the tool's machine is not keyed.
    fn instance_key(&self, tool: &str, instance: &str, principal: Option<&Principal>) -> Option<(StoreKey, bool)>;
    /// Whether `tool` fires a transition.
    fn transitions(&self, tool: &str) -> bool;
    /// Whether an effect is registered under `name`.
    fn has_effect(&self, name: &str) -> bool;
    /// The server the engine serves, while it lives (`server/` knows its type).
    fn host(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>>;
}

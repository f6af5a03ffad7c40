//! [`Effects`]: the effect functions a server dispatches, by name, and its policy.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::{Attempt, EffectCall, EffectError, EffectFnPtr, EffectPolicy};

/// A registered effect function.
pub(crate) type EffectFn = Arc<dyn Fn(EffectCall) -> Attempt + Send + Sync>;

/// The effects a server dispatches, by name, and how.
#[derive(Clone, Default)]
pub(crate) struct Effects {
    pub(crate) functions: HashMap<String, EffectFn>,
    pub(crate) policy: EffectPolicy,
    /// The application states the server was given, which an effect reads with
    /// [`EffectCall::state`].
    pub(crate) states: crate::app_state::States,
    /// The attempts running now, for a shutdown to wait for.
    pub(crate) attempts: tokio_util::task::TaskTracker,
    /// The places the attempts take, for as long as they run.
    pub(crate) slots: super::AttemptSlots,
}

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.functions.keys().collect();
        names.sort();
        f.debug_struct("Effects").field("names", &names).field("policy", &self.policy).finish()
    }
}

impl Effects {
    /// Registers `function` under `name`.
    pub(crate) fn add<F, Fut>(&mut self, name: &str, function: F)
    where
        F: Fn(EffectCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), EffectError>> + Send + 'static,
    {
        let function: EffectFn = Arc::new(move |call| Box::pin(function(call)));
        self.functions.insert(name.to_string(), function);
    }

    /// Registers a machine's `entry`/`exit` function under `name`, unless the builder
    /// registered one of that name already.
    pub(crate) fn add_declared(&mut self, name: &str, function: EffectFnPtr) {
        if !self.functions.contains_key(name) {
            self.functions.insert(name.to_string(), Arc::new(function));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }
}

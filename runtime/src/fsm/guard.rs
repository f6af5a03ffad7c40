//! Guards: the rules on values a machine names on its transitions (XState v5's `guard`),
//! judged by the gate on the instance's data and the call's input before the handler runs.
//!
//! A guard is a plain function, `fn(&Context, &Input) -> Result<(), Failure>`. `machine!`
//! checks at the guard's literal that the function exists and takes the machine's context;
//! a machine loaded from XState JSON names its guards, and the server is given each
//! function with [`ServerBuilder::guard`](crate::ServerBuilder::guard).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::Failure;

/// What a guard said of one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The branch is taken.
    Pass,
    /// The guard refused, in its own words.
    Refuse(Failure),
    /// The instance has no data yet, and the guard reads some: it refuses.
    NoContext,
    /// The stored data no longer reads as the guard's context type.
    ContextUnreadable(&'static str),
    /// The call's checked arguments do not read as the guard's input type (a guard whose
    /// input is not the action's): a bug of the server, not of the call.
    InputUnreadable(&'static str),
}

/// Judges a call with `guard`: reads the context (`None`: never set) and the call's
/// checked arguments as the guard's types, then runs it. Generated code and
/// [`Guard::new`] call it.
pub fn judge<C: DeserializeOwned, I: DeserializeOwned>(
    guard: fn(&C, &I) -> Result<(), Failure>,
    context: Option<&Value>,
    input: &Map<String, Value>,
) -> Verdict {
    let context = match context {
        Some(value) => match C::deserialize(value) {
            Ok(context) => context,
            Err(_) => return Verdict::ContextUnreadable(std::any::type_name::<C>()),
        },
        // A machine without a context (`()`) reads nothing; one with a context never set
        // has nothing for the guard to judge.
        None => match C::deserialize(&Value::Null) {
            Ok(context) => context,
            Err(_) => return Verdict::NoContext,
        },
    };
    let Ok(input) = I::deserialize(input) else { return Verdict::InputUnreadable(std::any::type_name::<I>()) };
    match guard(&context, &input) {
        Ok(()) => Verdict::Pass,
        Err(failure) => Verdict::Refuse(failure),
    }
}

/// The signature every guard is erased to.
type Judge = dyn Fn(Option<&Value>, &Map<String, Value>) -> Verdict + Send + Sync;

/// A guard function under the name machines give it.
#[derive(Clone)]
pub struct Guard {
    name: String,
    judge: Arc<Judge>,
}

impl Guard {
    /// The guard `name` (as machines name it) that runs `guard`.
    ///
    /// ```
    /// use serde::Deserialize;
    /// use toolgate_runtime::{Failure, Guard};
    /// #[derive(Deserialize)]
    /// struct Payment { captured: u64 }
    /// #[derive(Deserialize)]
    /// struct Refund { amount: u64 }
    /// fn within_captured(payment: &Payment, refund: &Refund) -> Result<(), Failure> {
    ///     if refund.amount <= payment.captured { Ok(()) } else { Err(Failure::new("OVER_CAPTURED", "more than was captured")) }
    /// }
    /// let guard = Guard::new("within_captured", within_captured);
    /// assert_eq!(guard.name(), "within_captured");
    /// ```
    pub fn new<C: DeserializeOwned + 'static, I: DeserializeOwned + 'static>(
        name: impl Into<String>,
        guard: fn(&C, &I) -> Result<(), Failure>,
    ) -> Self {
        Self { name: name.into(), judge: Arc::new(move |context, input| judge(guard, context, input)) }
    }

    /// The guard of a `machine!` registration.
    pub(crate) fn registered(registration: &GuardRegistration) -> Self {
        let judge = registration.judge;
        Self { name: registration.name.to_string(), judge: Arc::new(judge) }
    }

    /// The name machines give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Judges a call.
    pub(crate) fn judge(&self, context: Option<&Value>, input: &Map<String, Value>) -> Verdict {
        (self.judge)(context, input)
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").field("name", &self.name).finish_non_exhaustive()
    }
}

impl PartialEq for Guard {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.judge, &other.judge)
    }
}

impl Eq for Guard {}

/// A guard a `machine!` names, as it registers it (generated code only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct GuardRegistration {
    /// The name, as written in the machine.
    pub name: &'static str,
    /// The function, erased.
    pub judge: fn(Option<&Value>, &Map<String, Value>) -> Verdict,
}

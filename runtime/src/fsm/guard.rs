//! Guards: the rules on values a machine names on its transitions (XState v5's `guard`),
//! judged by the gate on the instance's data and the call's input before the handler runs.
//!
//! A guard is a plain function, `fn(&Context, &Input) -> Result<(), Failure>`, or
//! `fn(&Context, &Input, &Caller) -> Result<(), Failure>` for one that judges who calls
//! ([`GuardFn`]). `machine!` checks at the guard's literal that the function exists and
//! takes the machine's context;
//! a machine loaded from XState JSON names its guards, and the server is given each
//! function with [`ServerBuilder::guard`](crate::ServerBuilder::guard).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Caller;
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

/// A function that is a guard on a machine whose context is `C`: `fn(&C, &Input) ->
/// Result<(), Failure>`, or `fn(&C, &Input, &Caller) -> Result<(), Failure>`. `Input` is
/// the input of the actions whose transitions it guards (or a part of it: any type their
/// arguments read as). `M` tells the two apart; it is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a guard of a machine whose context is `{C}`",
    label = "not a guard on `{C}`",
    note = "a guard is `fn(&{C}, &Input) -> Result<(), Failure>`, or `fn(&{C}, &Input, &Caller) -> Result<(), Failure>` to judge who calls (`Input`: the input of the actions whose transition it guards)"
)]
pub trait GuardFn<C, M>: Send + Sync + 'static {
    /// What the guard reads the call's checked arguments as.
    type Input: DeserializeOwned;

    /// Runs the guard.
    fn check(&self, context: &C, input: &Self::Input, caller: &Caller<'_>) -> Result<(), Failure>;
}

/// [`GuardFn`]'s marker for a guard that takes the caller.
#[doc(hidden)]
#[derive(Debug)]
pub enum TakesCaller {}

impl<F, C, I> GuardFn<C, (I,)> for F
where
    F: Fn(&C, &I) -> Result<(), Failure> + Send + Sync + 'static,
    I: DeserializeOwned,
{
    type Input = I;

    fn check(&self, context: &C, input: &I, _: &Caller<'_>) -> Result<(), Failure> {
        self(context, input)
    }
}

impl<F, C, I> GuardFn<C, (I, TakesCaller)> for F
where
    F: Fn(&C, &I, &Caller<'_>) -> Result<(), Failure> + Send + Sync + 'static,
    I: DeserializeOwned,
{
    type Input = I;

    fn check(&self, context: &C, input: &I, caller: &Caller<'_>) -> Result<(), Failure> {
        self(context, input, caller)
    }
}

/// Judges a call by `caller` with `guard`: reads the context (`None`: never set) and the
/// call's checked arguments as the guard's types, then runs it. Generated code and
/// [`Guard::new`] call it.
pub fn judge<C: DeserializeOwned, M, G: GuardFn<C, M>>(
    guard: &G,
    context: Option<&Value>,
    input: &Map<String, Value>,
    caller: &Caller<'_>,
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
    let Ok(input) = <G::Input as serde::Deserialize>::deserialize(input) else {
        return Verdict::InputUnreadable(std::any::type_name::<G::Input>());
    };
    match guard.check(&context, &input, caller) {
        Ok(()) => Verdict::Pass,
        Err(failure) => Verdict::Refuse(failure),
    }
}

/// The signature every guard is erased to.
type Judge = dyn Fn(Option<&Value>, &Map<String, Value>, &Caller<'_>) -> Verdict + Send + Sync;

/// A guard function under the name machines give it.
#[derive(Clone)]
pub struct Guard {
    name: String,
    judge: Arc<Judge>,
}

impl Guard {
    /// The guard `name` (as machines name it) that runs `guard` (a [`GuardFn`]).
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
    pub fn new<C: DeserializeOwned + 'static, M: 'static>(name: impl Into<String>, guard: impl GuardFn<C, M>) -> Self {
        let judge = move |context: Option<&Value>, input: &Map<String, Value>, caller: &Caller<'_>| {
            judge(&guard, context, input, caller)
        };
        Self { name: name.into(), judge: Arc::new(judge) }
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

    /// Judges a call by `caller`.
    pub(crate) fn judge(&self, context: Option<&Value>, input: &Map<String, Value>, caller: &Caller<'_>) -> Verdict {
        (self.judge)(context, input, caller)
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
    pub judge: fn(Option<&Value>, &Map<String, Value>, &Caller<'_>) -> Verdict,
}

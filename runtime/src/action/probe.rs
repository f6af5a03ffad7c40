//! What the macros' compile-time checks ask of a name, where rustc's own answer would be
//! a failed bound or an unresolved name worded in its terms.
//!
//! Each check puts a stand-in with the name in an outer scope and looks the name up in an
//! inner one that glob-imports the module (`use self::*`), so the name reaches the user's
//! item where there is one and the stand-in elsewhere. Everything still compiles; a
//! `const` then probes what the name reached, `(&&Probe(value)).method()` (autoref: the
//! method for the stand-in's type is found one reference earlier than the fallback), and
//! panics with toolgate's message, spanned at the user's token.
//!
//! - `#[action]` on a function that is not at module level (an associated function in
//!   an `impl` block, a function in a function body): the handler's name reaches the
//!   stand-in, which returns a [`StandIn`] ([`NotAtModuleLevel`]).
//! - A `machine!` guard named by an identifier that names no function: the name reaches
//!   a function pointer whose input is [`NoGuard`] ([`GuardMissing`]).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::Failure;

/// A value whose type the check asks about.
#[derive(Debug)]
pub struct Probe<T>(pub T);

/// What a probe found.
#[derive(Debug)]
pub struct ProbeAnswer<const YES: bool>;

/// What the probe in `_probe` answered (the closure is never called: its return type
/// carries the answer), for the `const` that panics with toolgate's message.
pub const fn answer<const YES: bool, F: Fn() -> ProbeAnswer<YES>>(_probe: &F) -> bool {
    YES
}

/// What an action's stand-in returns: a future never polled, which lets the action's
/// adapter compile, so that the placement is the one error.
#[derive(Debug)]
pub struct StandIn<T>(PhantomData<T>);

impl<T> StandIn<T> {
    /// The stand-in's result.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Future for StandIn<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<T> {
        Poll::Pending
    }
}

/// The answer where the handler's name reached the stand-in.
pub trait NotAtModuleLevel {
    /// Not at module level.
    fn placement(&self) -> ProbeAnswer<false> {
        ProbeAnswer
    }
}

impl<T> NotAtModuleLevel for &Probe<StandIn<T>> {}

/// The answer where the handler's name reached the function itself, at module level.
pub trait AtModuleLevel {
    /// At module level.
    fn placement(&self) -> ProbeAnswer<true> {
        ProbeAnswer
    }
}

impl<T> AtModuleLevel for Probe<T> {}

/// What an action that is not at module level is told.
pub const NOT_AT_MODULE_LEVEL: &str = "`#[action]` goes on a function at module level, not inside an `impl` block or a function body: move the function to module level (reach shared values with `State<T>` parameters and `ServerBuilder::state`)";

/// The input of a guard's stand-in. It reads from anything, so that the machine's
/// registration still compiles and the guard's check is the one error.
#[derive(Debug)]
pub struct NoGuard;

impl<'de> serde::Deserialize<'de> for NoGuard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| NoGuard)
    }
}

/// A guard's stand-in (never judged: the guard's check fails to compile first).
pub fn no_guard<C>(_: &C, _: &NoGuard) -> Result<(), Failure> {
    Ok(())
}

/// The answer where a guard's name reached the stand-in: it names no function.
pub trait GuardMissing {
    /// Not found.
    fn guard(&self) -> ProbeAnswer<false> {
        ProbeAnswer
    }
}

impl<C> GuardMissing for &Probe<for<'a, 'b> fn(&'a C, &'b NoGuard) -> Result<(), Failure>> {}

/// The answer where a guard's name reached a function.
pub trait GuardFound {
    /// Found.
    fn guard(&self) -> ProbeAnswer<true> {
        ProbeAnswer
    }
}

impl<T> GuardFound for Probe<T> {}

//! What an effect's function receives ([`EffectCall`]) and returns ([`Attempt`], which
//! fails with an [`EffectError`]).

use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::app_state::State;

/// One attempt at an effect, as its function receives it.
#[derive(Debug, Clone)]
pub struct EffectCall {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) instance: String,
    pub(crate) attempt: u32,
    pub(crate) input: Value,
    pub(crate) states: crate::app_state::States,
}

impl EffectCall {
    /// The effect's registered name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its idempotency key: the same on every attempt, different for every effect any
    /// commit recorded. Give it to the receiver (an `Idempotency-Key` header, a unique
    /// column) so that a repeated attempt is recognized.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The instance whose commit recorded it (`Q-7`).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Which attempt this is, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The application state of type `T` the server was given with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state), as a handler's
    /// [`State<T>`] parameter receives it: the pool an effect writes through, the client it
    /// calls out with. A type the server was not given fails the attempt, naming the type
    /// (it is tried again, then dead-lettered: give the server the state).
    ///
    /// ```no_run
    /// # use toolgate_runtime::State;
    /// # use toolgate_runtime::effect::{EffectCall, EffectError};
    /// # #[derive(Clone)] struct Mailer;
    /// # impl Mailer { async fn send(&self, _: &str) -> Result<(), std::io::Error> { Ok(()) } }
    /// async fn send_receipt(call: EffectCall) -> Result<(), EffectError> {
    ///     let State(mailer) = call.state::<Mailer>()?;
    ///     mailer.send(call.key()).await?;
    ///     Ok(())
    /// }
    /// ```
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Result<State<T>, EffectError> {
        self.states.get::<T>().map(State).ok_or_else(|| {
            EffectError::new(format!(
                "effect `{}` reads the state `{}`, which the server was not given (`ServerBuilder::state`)",
                self.name,
                std::any::type_name::<T>()
            ))
        })
    }

    /// The input as the handler recorded it, read as `T`.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, EffectError> {
        serde_json::from_value(self.input.clone())
            .map_err(|error| EffectError::new(format!("the input of effect `{}` does not read: {error}", self.name)))
    }
}

/// Why an attempt failed: it is tried again later, or dead-lettered after the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectError(String);

impl EffectError {
    /// A failure saying `why`.
    pub fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

impl std::fmt::Display for EffectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for EffectError {
    fn from(error: E) -> Self {
        Self(error.to_string())
    }
}

/// One attempt under way: what an effect's function returns, boxed.
pub type Attempt = Pin<Box<dyn Future<Output = Result<(), EffectError>> + Send>>;

/// An effect function a `machine!`'s `entry`/`exit` names, as the machine's registration
/// holds it (generated code only).
#[doc(hidden)]
pub type EffectFnPtr = fn(EffectCall) -> Attempt;

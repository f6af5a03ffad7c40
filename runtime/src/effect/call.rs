//! What an effect's function receives ([`EffectCall`]) and returns ([`Attempt`], which
//! fails with an [`EffectError`]).

use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// One attempt at an effect, as its function receives it.
#[derive(Debug, Clone)]
pub struct EffectCall {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) instance: String,
    pub(crate) attempt: u32,
    pub(crate) input: Value,
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

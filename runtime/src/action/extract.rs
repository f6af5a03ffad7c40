//! [`FromCtx`]: the handler parameters the call fills in, in the style of axum's
//! extractors. `#[action]` asks each parameter after the input for itself through this
//! trait, so the macro never has to recognise `Ctx` or `State<T>` by name to call the
//! handler.

use super::{Ctx, State, StateRequirement};
use crate::error::ToolError;

/// A handler parameter that the call fills in: [`Ctx`] (the call's context) and
/// [`State<T>`] (application state the server was given).
///
/// An `#[action]` handler takes its input first, if it has one, then any number of
/// `FromCtx` parameters in any order. A type of your own can implement it to reach
/// something every call can compute from its [`Ctx`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a parameter an `#[action]` handler can be given: after the input, parameters are `Ctx` or `State<T>`",
    label = "neither `Ctx` nor `State<…>`",
    note = "a handler has at most one input, its first parameter (a struct deriving `Deserialize` and `JsonSchema`); then `State<T>` and `Ctx` parameters, in any order"
)]
pub trait FromCtx: Sized {
    /// The application state this parameter needs from the server, checked at start-up.
    #[doc(hidden)]
    const STATE: Option<StateRequirement> = None;

    /// The parameter's value for the call `ctx` serves.
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError>;
}

impl FromCtx for Ctx {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(ctx.clone())
    }
}

impl<T: Clone + Send + Sync + 'static> FromCtx for State<T> {
    const STATE: Option<StateRequirement> = Some(StateRequirement::of::<T>());

    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        // The server checked at start-up that it holds every state a handler asks for.
        ctx.states.get::<T>().map(State).ok_or_else(|| {
            ToolError::internal(format_args!("no application state of type `{}`", std::any::type_name::<T>()))
        })
    }
}

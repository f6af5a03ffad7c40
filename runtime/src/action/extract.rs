//! [`FromCtx`]: the handler parameters the call fills in, in the style of axum's
//! extractors. `#[action]` asks each parameter after the input for itself through this
//! trait, so the macro never has to recognise `Ctx` or `State<T>` by name to call the
//! handler.

use super::{Ctx, State, StateRequirement};
use crate::auth::Principal;
use crate::error::ToolError;
use crate::fsm::ContextType;

/// What an `Instance<T>` or `InstanceMut<T>` parameter needs, as the action's
/// registration records it: the machine's context must be `T` (checked at start-up), and
/// `writes` makes the call hold its instance's lease and commit it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ContextRequirement {
    /// The context type the parameter reads.
    pub ty: ContextType,
    /// `InstanceMut<T>`: the call may change the context.
    pub writes: bool,
}

/// A handler parameter that the call fills in: [`Ctx`] (the call's context) and
/// [`State<T>`] (application state the server was given).
///
/// An `#[action]` handler takes its input first, if it has one, then any number of
/// `FromCtx` parameters in any order. A type of your own can implement it to reach
/// something every call can compute from its [`Ctx`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a parameter an `#[action]` handler can be given: after the input, parameters are `Ctx`, `State<T>`, `Principal`, `Option<Principal>`, `Instance<T>`, `InstanceMut<T>` or `Transaction`",
    label = "not `Ctx`, `State<…>`, `Principal` or `Instance<…>`",
    note = "a handler has at most one input, its first parameter (a struct deriving `Deserialize` and `JsonSchema`); then `State<T>`, `Ctx`, `Principal` and instance-context parameters, in any order"
)]
pub trait FromCtx: Sized {
    /// The application state this parameter needs from the server, checked at start-up.
    #[doc(hidden)]
    const STATE: Option<StateRequirement> = None;

    /// Whether this parameter needs an authenticated principal: a call without one is then
    /// refused (`UNAUTHENTICATED`) before the handler runs.
    #[doc(hidden)]
    const NEEDS_PRINCIPAL: bool = false;

    /// The instance context this parameter reads (and whether it may change it), checked
    /// at start-up against the machine's `context`.
    #[doc(hidden)]
    const CONTEXT: Option<ContextRequirement> = None;

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

/// The authenticated caller. A tool whose handler takes it is refused without one
/// (`UNAUTHENTICATED`), before the handler runs.
impl FromCtx for Principal {
    const NEEDS_PRINCIPAL: bool = true;

    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        ctx.principal.clone().ok_or_else(|| ToolError::unauthenticated(ctx.tool))
    }
}

/// The caller, when it authenticated: for a tool that serves anyone but may do more for a
/// known principal.
impl FromCtx for Option<Principal> {
    fn from_ctx(ctx: &Ctx) -> Result<Self, ToolError> {
        Ok(ctx.principal.clone())
    }
}

//! [`Ctx`]: what a handler knows about the call it serves.

use super::States;
use crate::store::StoreKey;

/// The context of one tool call, passed as a handler's last argument.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) tool: &'static str,
    pub(crate) domain: Option<&'static str>,
    pub(crate) flow: Option<StoreKey>,
    pub(crate) instance: Option<String>,
    pub(crate) machine_state: Option<String>,
    pub(crate) states: States,
}

impl Ctx {
    /// The tool being called (`invoice_discharge`).
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// The tool's intent domain (`None` for a global tool).
    pub fn domain(&self) -> Option<&str> {
        self.domain
    }

    /// The flow (conversation) the call runs in; `None` for a tool that runs in no flow
    /// (its machine is keyed and the server has a single domain, or no lock).
    pub fn flow(&self) -> Option<&StoreKey> {
        self.flow.as_ref()
    }

    /// The instance the call acts on, for a keyed machine: the value of the machine's key
    /// argument (`INV-7`).
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// The state of the tool's machine — of its instance, for a keyed machine — when the
    /// call was admitted (`None` for tools without a machine). A transitioning call holds
    /// the lease, so this state cannot change under it. (Application state is a handler
    /// parameter, `State<T>`.)
    pub fn machine_state(&self) -> Option<&str> {
        self.machine_state.as_deref()
    }
}

/// Implemented only by [`Ctx`]: a handler's last parameter must be one, and this bound
/// reports a wrong type at that parameter in the handler author's terms.
#[diagnostic::on_unimplemented(
    message = "the last parameter of an `#[action]` handler must be `Ctx`, not `{Self}`",
    label = "expected `Ctx` here",
    note = "handlers are `async fn(input: T, ctx: Ctx)` or `async fn(ctx: Ctx)`"
)]
pub trait IsCtx: Sized {
    #[doc(hidden)]
    fn from_ctx(ctx: Ctx) -> Self;
}

impl IsCtx for Ctx {
    fn from_ctx(ctx: Ctx) -> Self {
        ctx
    }
}

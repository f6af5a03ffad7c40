//! [`Ctx`]: what a handler knows about the call it serves.

use crate::flow::FlowKey;

/// The context of one tool call, passed as a handler's last argument.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) tool: &'static str,
    pub(crate) domain: Option<&'static str>,
    pub(crate) flow: FlowKey,
    pub(crate) state: Option<String>,
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

    /// The flow the call runs in.
    pub fn flow(&self) -> &FlowKey {
        &self.flow
    }

    /// The state of the tool's machine when the call was admitted (`None` for tools whose
    /// domain has no machine). A transitioning call holds the flow's lease, so this state
    /// cannot change under it.
    pub fn state(&self) -> Option<&str> {
        self.state.as_deref()
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

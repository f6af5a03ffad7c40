//! [`Ctx`]: what a handler knows about the call it serves.

use crate::flow::FlowKey;

/// The context of one tool call, passed as a handler's last argument.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) tool: &'static str,
    pub(crate) domain: &'static str,
    pub(crate) flow: FlowKey,
    pub(crate) state: Option<String>,
}

impl Ctx {
    /// The tool being called (`invoice_discharge`).
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// The tool's intent domain.
    pub fn domain(&self) -> &str {
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

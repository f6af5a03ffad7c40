//! [`Ctx`]: what a handler knows about the call it serves.

use rmcp::RoleServer;
use rmcp::service::Peer;

use super::{CallClient, LogLevel, States};
use crate::flow::FlowId;
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
    pub(crate) client: CallClient,
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
    pub fn flow(&self) -> Option<FlowId> {
        self.flow.as_ref().map(FlowId::of)
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

impl Ctx {
    /// Reports progress to the caller (`notifications/progress` against the progress token
    /// its request carried; nothing if it carried none). `progress` should grow with each
    /// call; `total` is the end, if known.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.client.progress(progress, total, message.map(str::to_string)).await;
    }

    /// Sends a log message to the client (`notifications/message`, logger = the tool),
    /// if the client's `logging/setLevel` (default `Info`) admits `level`. Over stateful
    /// HTTP it travels on the call's own response stream, ahead of the result, so a client
    /// that never opened the session's standalone stream gets it too. (MCP deprecates
    /// logging in SEP-2577.)
    pub async fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.client.log(level, self.tool, message.into()).await;
    }

    /// Whether the client cancelled this call. The server drops a cancelled handler at its
    /// next `.await` and commits nothing; a handler doing long synchronous work can check
    /// this between steps.
    pub fn is_cancelled(&self) -> bool {
        self.client.cancellation().is_cancelled()
    }

    /// The client itself, for what the negotiated protocol allows the server to ask of it
    /// (sampling, elicitation, roots). MCP 2026-07-28 refuses server-to-client requests.
    pub fn peer(&self) -> &Peer<RoleServer> {
        self.client.peer()
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

/// Implemented by no type: what an `#[action]` on an associated function runs into.
///
/// Actions are functions at module level, registered by name at link time; on a function
/// inside an `impl` block (or a function body) the macro's registration reaches a
/// stand-in that requires this trait, so the one error says to move the function out.
#[diagnostic::on_unimplemented(
    message = "`#[action]` goes on a function at module level, not inside an `impl` block or a function body",
    label = "this action is not at module level",
    note = "move the function to module level; reach shared values with `State<T>` parameters and `ServerBuilder::state`"
)]
pub trait FreeFunction {}

impl IsCtx for Ctx {
    fn from_ctx(ctx: Ctx) -> Self {
        ctx
    }
}

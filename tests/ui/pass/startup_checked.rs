//! A `startup_checked` action is bound to a machine loaded at start-up (XState JSON), not
//! declared with `machine!`: it compiles, and its binding is checked when the server starts.
use toolgate::prelude::*;

/// What the tools return.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    /// Always true.
    ok: bool,
}

/// Approve a claim under review.
#[action(domain = "claims", machine = "claim", bind_state = ["review"], transition = "APPROVE", startup_checked)]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Close a claim, in the claims domain's own machine (also loaded at start-up).
#[action(domain = "claims", startup_checked, bind_state = "approved", transition = "CLOSE")]
async fn close() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

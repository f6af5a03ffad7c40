//! Two machines in one module, actions bound to each; ids that are not identifiers.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

toolgate::machine! {
    id: "purchase-order",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

/// What the tools return.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    /// Always true.
    ok: bool,
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Close an open purchase order.
#[action(domain = "purchasing", machine = "purchase-order", bind_state = "open", transition = "CLOSE")]
async fn close() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

//! `machine = "…"` binds an action of one domain to another domain's machine.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { on: { APPROVE: "approved" } },
        approved: { type: "final" },
    }
}

/// What the tools return.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    /// Always true.
    ok: bool,
}

/// Notify the approver of an invoice under review.
#[action(domain = "mail", machine = "invoice", bind_state = "review")]
async fn notify_approver() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Approve an invoice, from the approvals domain.
#[action(
    domain = "approvals",
    machine = "invoice",
    name = "approvals_approve_invoice",
    bind_state = "review",
    transition = "APPROVE"
)]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

// A bound action whose machine is not declared with `machine!` (and is not
// `startup_checked`): one error per action, at the literal naming the machine: `domain`,
// or `machine` when given.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Approve an invoice under review.
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE")]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Pay an approved invoice.
#[action(domain = "payments", machine = "invoice", bind_state = "approved")]
async fn pay() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

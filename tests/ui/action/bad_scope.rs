// A scope is an OAuth scope token, listed once: each error is on its literal.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Captures a payment. Does not refund.
#[action(domain = "pay", transactional, scope = ["payments:capture", "payments capture", "payments:capture"])]
async fn pay_capture() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

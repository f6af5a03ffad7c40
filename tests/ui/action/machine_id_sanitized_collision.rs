// An action bound to `purchase-order`, which is not declared, while `purchase_order` is:
// ids are compared whole, so this is the not-declared error.
use toolgate::prelude::*;

toolgate::machine! {
    id: "purchase_order",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Approve a purchase order.
#[action(domain = "purchasing", machine = "purchase-order", bind_state = "review")]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

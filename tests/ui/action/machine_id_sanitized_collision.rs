// An action bound to `purchase-order`, which is not declared, while `purchase_order` is:
// both ids map to the same hidden checker, so the binding is checked against the wrong
// machine (the message names `purchase_order`) instead of failing to find the machine.
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
async fn approve(_ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

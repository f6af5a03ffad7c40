// One bad state in a list: only that literal is marked.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { on: { APPROVE: "approved", REJECT: "draft" } },
        approved: { on: { DISCHARGE: "discharged" } },
        discharged: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Does one thing to an invoice.
#[action(domain = "invoice", bind_state = ["review", "aproved"])]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

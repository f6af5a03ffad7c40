// Binding errors are collected: two unknown states and an unknown event.
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
#[action(domain = "invoice", bind_state = ["aproved", "reveiw"], transition = "DISCHARG")]
async fn discharge() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

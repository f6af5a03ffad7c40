// An event no state of the machine accepts.
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
#[action(domain = "invoice", bind_state = "approved", transition = "DISCHARG")]
async fn discharge() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

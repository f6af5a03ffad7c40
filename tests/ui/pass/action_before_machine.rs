//! An action declared before its machine in the same module: the machine is found by id,
//! whatever the order, so the binding is still checked.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

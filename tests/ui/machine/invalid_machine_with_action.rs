// A machine that parses but breaks a rule is still declared (unchecked): the action bound
// to it adds no "not declared" error, only the machine's own error is reported.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "reveiw" } },
        review: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

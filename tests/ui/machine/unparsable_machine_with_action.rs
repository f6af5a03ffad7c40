// A machine that does not parse (here an unknown key): only its error is reported, not a
// "not declared" error at the action bound to it.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    context: "none",
    states: {
        draft: { on: { SUBMIT: "review" } },
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

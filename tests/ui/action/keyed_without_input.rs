// An action bound to a keyed machine must take an input that names the instance.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    key: "id",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Submits some invoice — but which one?
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

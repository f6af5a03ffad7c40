// A machine declared after its action, in another module, still checks the action's
// literals: the error is at the misspelt state.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "drafts", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

mod machines {
    toolgate::machine! {
        id: "invoice",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { type: "final" },
        }
    }
}

fn main() {}

// Two `machine!`s with one id, in two modules: the action bound to it gets one error
// naming both declarations. (A server built from them also refuses to start, naming
// both; that check covers machines no action is bound to.)
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

mod first {
    toolgate::machine! {
        id: "invoice",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { type: "final" },
        }
    }
}

mod second {
    toolgate::machine! {
        id: "invoice",
        initial: "open",
        states: {
            open: { on: { CLOSE: "closed" } },
            closed: { type: "final" },
        }
    }
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

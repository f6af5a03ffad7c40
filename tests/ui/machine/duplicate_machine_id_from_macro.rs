// A macro of the user's that declares a machine, invoked twice: both declarations come
// from the same tokens, and are still one error (the action bound to the id adds none:
// the second declaration emits no impl, though its tokens are the first's).
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

macro_rules! invoice_machine {
    () => {
        toolgate::machine! {
            id: "invoice",
            initial: "draft",
            states: {
                draft: { on: { SUBMIT: "review" } },
                review: { type: "final" },
            }
        }
    };
}

invoice_machine!();

mod again {
    invoice_machine!();
}

fn main() {}

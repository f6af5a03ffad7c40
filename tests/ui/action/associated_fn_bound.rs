// A bound action on an associated function: the module-level error, and rustc's own
// complaint about the unnamed item that checks the binding (which only a module or a
// function body can hold).
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

struct Invoices;

impl Invoices {
    /// Submit a draft invoice for review.
    #[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
    async fn submit() -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}

fn main() {}

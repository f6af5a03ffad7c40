// The machine's checker is a `macro_rules!`: an action in a sibling module of the
// `machine!` does not see it.

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
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

mod tools {
    use super::Done;
    use toolgate::prelude::*;

    /// Submit a draft invoice for review.
    #[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
    async fn submit() -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}

fn main() {}

//! Actions in a child module of the machine's module find it by id.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

mod tools {
    use toolgate::prelude::*;

    /// What the tools return.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub(crate) struct Done {
        /// Always true.
        ok: bool,
    }

    /// Submit a draft invoice for review.
    #[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
    async fn submit() -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }

    mod nested {
        use super::Done;
        use toolgate::prelude::*;

        /// Look at an invoice under review.
        #[action(domain = "invoice", bind_state = "review")]
        async fn inspect() -> Result<Done, ToolError> {
            Ok(Done { ok: true })
        }
    }
}

fn main() {}

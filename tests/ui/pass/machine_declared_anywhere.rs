//! A machine is found from any module of the crate, whatever the order: here its actions
//! come first, in a module before the sibling module that declares it, and in a child
//! module of that one, and in the crate root after the machine's module.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
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

mod machines {
    pub(crate) mod more {
        use crate::Done;
        use toolgate::prelude::*;

        /// Approve an invoice under review.
        #[action(domain = "invoice", bind_state = "review", transition = "APPROVE")]
        async fn approve() -> Result<Done, ToolError> {
            Ok(Done { ok: true })
        }
    }

    toolgate::machine! {
        id: "invoice",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { on: { APPROVE: "approved" } },
            approved: { type: "final" },
        }
    }
}

/// Show an approved invoice.
#[action(domain = "invoice", bind_state = "approved")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {
    assert!(Server::from_registry("invoice").build().is_ok());
}

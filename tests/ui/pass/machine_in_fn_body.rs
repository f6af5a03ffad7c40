//! A machine declared in a function body, or by a macro of the user's, is found by its
//! actions like any other: `machine!` claims its id crate-wide from there too.
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

/// Close an open ticket.
#[action(domain = "ticket", bind_state = "open", transition = "CLOSE")]
async fn close() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn declarations() {
    toolgate::machine! {
        id: "invoice",
        initial: "draft",
        states: {
            draft: { on: { SUBMIT: "review" } },
            review: { type: "final" },
        }
    }
}

macro_rules! ticket_machine {
    () => {
        toolgate::machine! {
            id: "ticket",
            initial: "open",
            states: {
                open: { on: { CLOSE: "closed" } },
                closed: { type: "final" },
            }
        }
    };
}

ticket_machine!();

fn main() {
    declarations();
    assert!(Server::from_registry("invoice").build().is_ok());
    assert!(Server::from_registry("ticket").build().is_ok());
}

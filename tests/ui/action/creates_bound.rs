// `creates` starts a new instance in the initial state: it is bound to no state and fires
// no event.
use toolgate::prelude::*;

toolgate::machine! {
    id: "ticket",
    key: "ticket_id",
    mint: "T-{n}",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Open a ticket. Does not close one.
#[action(domain = "ticket", creates, bind_state = "open", transition = "CLOSE")]
async fn ticket_open() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

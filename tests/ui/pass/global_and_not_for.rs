//! A global tool (no domain, unprefixed name), a global tool bound to a named machine, and
//! `not_for` on a domain tool.
use toolgate::prelude::*;

toolgate::machine! {
    id: "session",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Explain how this server works.
#[action(global)]
async fn help() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// End the session.
#[action(global, machine = "session", bind_state = "open", transition = "CLOSE")]
async fn end_session() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Search buses.
#[action(domain = "bus", not_for = "booking (use bus_book)")]
async fn search() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

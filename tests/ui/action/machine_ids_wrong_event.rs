// A machine declared under several ids checks each binding against its states.
use toolgate::prelude::*;

toolgate::machine! {
    id: ["bus", "flight"],
    initial: "idle",
    states: {
        idle: { on: { QUOTE: "quoted" } },
        quoted: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Book a flight.
#[action(domain = "flight", bind_state = "idle", transition = "BOOK")]
async fn book() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

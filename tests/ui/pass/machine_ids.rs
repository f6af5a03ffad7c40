//! One declaration, several machines: each id is a machine of its own.
use toolgate::prelude::*;

toolgate::machine! {
    id: ["bus", "flight"],
    initial: "idle",
    states: {
        idle: { on: { QUOTE: "quoted" } },
        quoted: { on: { BOOK: "booked" } },
        booked: { type: "final" },
    }
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Quote a bus; the function is named for its domain, so the tool is `bus_search`.
#[action(domain = "bus", bind_state = "idle", transition = "QUOTE")]
async fn bus_search() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Book a flight.
#[action(domain = "flight", bind_state = "quoted", transition = "BOOK")]
async fn book() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}

// An `entry` or `exit` effect names an `async fn(EffectCall) -> Result<(), EffectError>`:
// one that names nothing is an error at its literal.
toolgate::machine! {
    id: "quote",
    key: "quote_id",
    initial: "quoted",
    states: {
        quoted: { after: { "PT15M": "expired" }, on: { BOOK: "booked" } },
        booked: { type: "final" },
        expired: { type: "final", entry: "relase_hold" },
    }
}

#[allow(dead_code)]
async fn release_hold(_call: toolgate::effect::EffectCall) -> Result<(), toolgate::effect::EffectError> {
    Ok(())
}

fn main() {}

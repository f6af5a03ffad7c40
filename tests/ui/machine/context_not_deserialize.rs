// A context is stored and read back: its type must serialize and deserialize.
use toolgate::prelude::*;

#[derive(Serialize)]
struct Payment {
    amount: u64,
}

toolgate::machine! {
    id: "payment",
    key: "payment_id",
    context: Payment,
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

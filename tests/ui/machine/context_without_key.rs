// A context is each instance's data: a machine without instances (no `key`) has none.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize)]
struct Counter {
    count: u64,
}

toolgate::machine! {
    id: "counter",
    context: Counter,
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

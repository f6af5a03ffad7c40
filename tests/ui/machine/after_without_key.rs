// Time moves instances: a conversation's machine (no `key`) has none to move.
toolgate::machine! {
    id: "quote",
    initial: "quoted",
    states: {
        quoted: { after: { "PT15M": "expired" }, on: { BOOK: "booked" } },
        booked: { type: "final" },
        expired: { type: "final" },
    }
}

fn main() {}

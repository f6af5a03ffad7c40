// An `after` target is a state of the machine.
toolgate::machine! {
    id: "quote",
    key: "quote_id",
    initial: "quoted",
    states: {
        quoted: { after: { "PT15M": "expird" }, on: { BOOK: "booked", EXPIRE: "expired" } },
        booked: { type: "final" },
        expired: { type: "final" },
    }
}

fn main() {}

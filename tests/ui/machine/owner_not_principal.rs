// An instance belongs to a principal, the one whose call created it; nothing else owns one.
toolgate::machine! {
    id: "quote",
    key: "quote_id",
    owner: tenant,
    initial: "quoted",
    states: {
        quoted: { on: { BOOK: "booked" } },
        booked: { type: "final" },
    }
}

fn main() {}

// `after` takes ISO-8601 durations; months have no fixed length.
toolgate::machine! {
    id: "quote",
    key: "quote_id",
    initial: "quoted",
    states: {
        quoted: { after: { "P1M": "expired" }, on: { BOOK: "booked" } },
        booked: { type: "final" },
        expired: { type: "final" },
    }
}

fn main() {}

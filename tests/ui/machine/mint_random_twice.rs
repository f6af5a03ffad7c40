// A minted key holds one `{random}` (or one `{n}`): two would be two keys' worth of bits.
toolgate::machine! {
    id: "quote",
    key: "quote_id",
    mint: "Q-{random}-{random}",
    initial: "quoted",
    states: {
        quoted: { on: { BOOK: "booked" } },
        booked: { type: "final" },
    }
}

fn main() {}

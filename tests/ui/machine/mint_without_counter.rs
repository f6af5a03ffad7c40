// `mint` is a key format with one `{n}`, the counter the store draws; and only a keyed
// machine has keys to mint.
toolgate::machine! {
    id: "ticket",
    key: "ticket_id",
    mint: "T-{id}",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

toolgate::machine! {
    id: "chat",
    mint: "C-{n}",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

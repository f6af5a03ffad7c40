// `owner: principal` names instances by their owner and key: a machine without a key has none.
toolgate::machine! {
    id: "chat",
    owner: principal,
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

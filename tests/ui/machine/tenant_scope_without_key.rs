// `scope: tenant` names instances by tenant and key: a machine without a key has none.
toolgate::machine! {
    id: "chat",
    scope: tenant,
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

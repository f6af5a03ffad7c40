// The only scope a machine has is `tenant`.
toolgate::machine! {
    id: "bill",
    key: "id",
    scope: principal,
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

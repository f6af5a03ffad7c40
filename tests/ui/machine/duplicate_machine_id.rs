// Two machines with the same id in one module.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

toolgate::machine! {
    id: "invoice",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

// A state declared twice: the error is on the second declaration.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
        draft: { on: { SUBMIT: "review" } },
    }
}

fn main() {}

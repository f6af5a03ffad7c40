// An empty `id`: the error is on the literal.
toolgate::machine! {
    id: "",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

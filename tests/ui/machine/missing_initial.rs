// No `initial`: there is no token to point at, so the whole invocation is marked.
toolgate::machine! {
    id: "invoice",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

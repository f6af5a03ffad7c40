// No `id`: reported at the end of the input, i.e. on the whole invocation.
toolgate::machine! {
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

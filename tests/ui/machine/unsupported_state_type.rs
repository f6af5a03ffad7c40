// State types other than "final" and "atomic" are not supported: the error is on the type literal.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { type: "parallel", on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

// A machine key must be an argument name: the error is on the literal.
toolgate::machine! {
    id: "invoice",
    key: "invoice id",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

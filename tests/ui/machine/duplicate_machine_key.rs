// A machine key given twice: the error is on the second one.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    initial: "review",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

// A state listing the same event twice: the error is on the second one.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review", SUBMIT: "done" } },
        review: { on: { APPROVE: "done" } },
        done: { type: "final" },
    }
}

fn main() {}

// A state key given twice: the error is on the second one.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" }, on: { SAVE: "draft" } },
        review: { type: "final" },
    }
}

fn main() {}

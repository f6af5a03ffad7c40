// A state no transition reaches: the error is on the state name.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
        archived: { type: "final" },
    }
}

fn main() {}

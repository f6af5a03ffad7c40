// `initial` names an undeclared state: the error is on its literal.
toolgate::machine! {
    id: "invoice",
    initial: "drafts",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

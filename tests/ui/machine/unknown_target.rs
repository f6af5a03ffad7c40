// A transition to an undeclared state: the error is on the target literal (the state it was meant to reach is then unreachable, reported too).
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { on: { APPROVE: "aproved", REJECT: "draft" } },
        approved: { type: "final" },
    }
}

fn main() {}

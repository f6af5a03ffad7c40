// A final state with `on`: the error is on its `type` key.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final", on: { REOPEN: "draft" } },
    }
}

fn main() {}

// A state key `machine!` does not know (XState `entry`): the error is on the key.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { entry: "notify", on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

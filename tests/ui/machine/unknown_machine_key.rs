// A key `machine!` does not know: the error is on the key and lists the known ones.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    context: "none",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

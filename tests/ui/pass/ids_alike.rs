//! Two ids that differ only in punctuation are two machines.
toolgate::machine! {
    id: "in-voice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

toolgate::machine! {
    id: "in_voice",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

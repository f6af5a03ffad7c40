//! Ids that differ only in punctuation, case, or in a character written as the escape
//! `machine!` names another with (`-` as `_X2D_`), are machines of their own.
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

toolgate::machine! {
    id: "in_X2D_voice",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

toolgate::machine! {
    id: "In-voice",
    initial: "open",
    states: {
        open: { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

fn main() {}

// Validation errors are collected: each is reported at its own token.
toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "reveiw" } },
        review: { on: { APPROVE: "approved", APPROVE: "draft" } },
        approved: { type: "final", on: { REOPEN: "draft" } },
    }
}

fn main() {}

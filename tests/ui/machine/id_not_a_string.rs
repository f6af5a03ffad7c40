// An `id` written as an identifier: syn's error on the token.
toolgate::machine! {
    id: invoice,
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

fn main() {}

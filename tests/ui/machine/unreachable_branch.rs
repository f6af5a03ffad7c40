// The first branch without a guard always wins: a branch after it never runs.
use toolgate::prelude::*;

#[derive(Deserialize)]
struct Review {
    amount: u64,
}

fn small(_: &(), review: &Review) -> Result<(), Failure> {
    if review.amount < 100 { Ok(()) } else { Err(Failure::new("LARGE", "needs a person")) }
}

toolgate::machine! {
    id: "invoice",
    initial: "review",
    states: {
        review: { on: { ROUTE: [{ target: "manual" }, { target: "approved", guard: "small" }] } },
        manual: { on: { APPROVE: "approved" } },
        approved: { type: "final" },
    }
}

fn main() {
    let _ = small;
}

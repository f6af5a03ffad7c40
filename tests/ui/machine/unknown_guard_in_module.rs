// A guard named by its path: one that names no function of that module is reported at
// the guard, as written.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize)]
struct Payment {
    captured: u64,
}

#[derive(Deserialize)]
struct Refund {
    amount: u64,
}

mod rules {
    use super::{Payment, Refund};
    use toolgate::Failure;

    pub(crate) fn within_captured(payment: &Payment, refund: &Refund) -> Result<(), Failure> {
        if refund.amount <= payment.captured { Ok(()) } else { Err(Failure::new("OVER", "too much")) }
    }
}

toolgate::machine! {
    id: "payment",
    key: "payment_id",
    context: Payment,
    initial: "captured",
    states: {
        captured: { on: { REFUND: { target: "refunded", guard: "rules::within_capturd" } } },
        refunded: { type: "final" },
    }
}

fn main() {
    let _ = rules::within_captured;
}

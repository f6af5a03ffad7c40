// A guard names a function: one that does not exist is reported at its name.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize)]
struct Payment {
    captured: u64,
}

#[derive(Deserialize)]
struct Refund {
    amount: u64,
}

fn within_captured(payment: &Payment, refund: &Refund) -> Result<(), Failure> {
    if refund.amount <= payment.captured { Ok(()) } else { Err(Failure::new("OVER", "too much")) }
}

toolgate::machine! {
    id: "payment",
    key: "payment_id",
    context: Payment,
    initial: "captured",
    states: {
        captured: { on: { REFUND: { target: "refunded", guard: "within_capturd" } } },
        refunded: { type: "final" },
    }
}

fn main() {
    let _ = within_captured;
}

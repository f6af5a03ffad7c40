// A guard takes the machine's context, then the call's input.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize)]
struct Payment {
    captured: u64,
}

#[derive(Deserialize)]
struct Refund {
    amount: u64,
}

fn within_captured(refund: &Refund, payment: &Payment) -> Result<(), Failure> {
    if refund.amount <= payment.captured { Ok(()) } else { Err(Failure::new("OVER", "too much")) }
}

toolgate::machine! {
    id: "payment",
    key: "payment_id",
    context: Payment,
    initial: "captured",
    states: {
        captured: { on: { REFUND: { target: "refunded", guard: "within_captured" } } },
        refunded: { type: "final" },
    }
}

fn main() {}

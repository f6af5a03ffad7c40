// A guard says why it refuses: it returns `Result<(), Failure>`, not a `bool`.
use toolgate::prelude::*;

#[derive(Serialize, Deserialize)]
struct Payment {
    captured: u64,
}

#[derive(Deserialize)]
struct Refund {
    amount: u64,
}

fn within_captured(payment: &Payment, refund: &Refund) -> bool {
    refund.amount <= payment.captured
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

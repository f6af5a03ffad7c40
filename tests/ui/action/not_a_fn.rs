// `#[action]` on something that is not a function.
use toolgate::prelude::*;

/// An invoice.
#[action(domain = "invoice")]
struct Invoice {
    id: String,
}

fn main() {}

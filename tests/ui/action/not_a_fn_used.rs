// `#[action]` on a struct that is then used: the struct is not re-emitted, yet rustc
// reports no extra "cannot find struct" error for its uses, only the macro's own.
use toolgate::prelude::*;

/// An invoice.
#[action(domain = "invoice")]
struct Invoice {
    id: String,
}

fn main() {
    let invoice = Invoice { id: String::new() };
    let _ = invoice.id;
}

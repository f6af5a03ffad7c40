//! Names shared between the macros' expansions.

use proc_macro2::{Ident, Span};

/// The hidden `macro_rules!` that `machine!` defines for machine `id`, and through which
/// `#[action]` reaches the machine's declaration.
///
/// Characters that cannot appear in an identifier become `_`, so two ids can share a
/// checker (`purchase-order`, `purchase_order`); the checker therefore also receives the
/// id the action asked for and refuses a machine with another id.
pub(crate) fn machine_checker(id: &str, span: Span) -> Ident {
    let sanitized: String = id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    // Named so that rustc's own messages read right: "cannot find macro
    // `toolgate_machine_invoice`" where the machine is not in scope, "the name
    // `toolgate_machine_invoice` is defined multiple times" where it is declared twice.
    Ident::new(&format!("toolgate_machine_{sanitized}"), span)
}

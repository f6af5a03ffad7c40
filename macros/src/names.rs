//! Names shared between the macros' expansions.

use proc_macro2::{Ident, Span};

/// The hidden `macro_rules!` that `machine!` defines for machine `id`, and through which
/// `#[action]` reaches the machine's declaration.
pub(crate) fn machine_checker(id: &str, span: Span) -> Ident {
    let sanitized: String = id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    Ident::new(&format!("__toolgate_machine_{sanitized}"), span)
}

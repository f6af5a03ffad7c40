//! One declaration per machine id in a crate, enforced by rustc with one error.
//!
//! Each `machine!` claims its id with a `#[macro_export] macro_rules!` named after the id
//! (`claim_name`): exported macros are the one crate-wide namespace generated code shares
//! (from any module, or a function body), so a second claim of the id is rustc's E0428
//! "the name `machine_id_invoice` is defined multiple times", spanned at both
//! `id:` literals, and the crate keeps the first claim only.
//!
//! The impl through which actions find the machine is emitted *through* the macro the
//! crate kept, reached by a glob import of the crate root (a path to a macro-expanded
//! exported macro is refused by `macro_expanded_macro_exports_accessed_by_absolute_paths`;
//! a glob is not): the macro emits the impl for its own declaration, recognised by a
//! nonce, and nothing for another's. A second declaration of the id so emits no impl, and
//! each action bound to the id finds one impl, the kept declaration's, instead of two
//! (which were rustc's ambiguity error E0283, once per action, beside the E0428).
//!
//! The macro is defined inside an anonymous `const`, so that it is in no module's textual
//! (`macro_rules`) scope: a later declaration of the id in the same module reaches the
//! crate's claim through the glob too, not an earlier claim rustc refused.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// `declaration` (items) claimed for `id`: emitted if the crate keeps this declaration's
/// claim, dropped if another declaration of the id claimed it first.
pub(crate) fn claim(id: &syn::LitStr, declaration: TokenStream) -> TokenStream {
    let span = id.span();
    // Spanned at the literal: rustc's E0428 points at both declarations' ids.
    let name = format_ident!("{}", claim_name(&id.value()), span = span);
    let nonce = nonce(id);
    let definition = quote_spanned! {span=>
        const _: () = {
            // Linted in a function body (its export is not where it is written): the
            // claim is exported on purpose, from wherever `machine!` is.
            #[doc(hidden)]
            #[macro_export]
            #[allow(non_local_definitions)]
            macro_rules! #name {
                (#nonce $($item:tt)*) => { $($item)* };
                ($($other:tt)*) => {};
            }
        };
    };
    // The glob brings in every name of the crate root: the declaration's items name
    // nothing but absolute paths and the items it defines, which shadow the glob's.
    let use_site = quote_spanned! {span=>
        const _: () = {
            #[allow(unused_imports, clippy::wildcard_imports)]
            use crate::*;
            #name! { #nonce #declaration }
        };
    };
    quote! { #definition #use_site }
}

/// The name of the macro claiming `id`: `machine_id_` and the id, so that rustc's
/// E0428 says, in words a user reads as their own, that the machine id is declared twice
/// ("the name `machine_id_invoice` is defined multiple times"). It is hidden from docs,
/// and lives in the macro namespace only, where no item of the user's can collide with it.
///
/// Ids are any string, and the name must be an identifier, one per id (two ids mapped to
/// one name would be refused as duplicates): lowercase ASCII letters, digits and `_` are
/// kept, so a snake_case id reads as written, and every other character, uppercase
/// letters included, is written `_X` + its code point in uppercase hex + `_` (`order-v2`
/// → `order_X2D_v2`, `Invoice` → `_X49_nvoice`). The kept characters are never
/// uppercase, so an `X` after `_` always starts an escape: the encoding can be read back,
/// and two ids never share a name.
pub(crate) fn claim_name(id: &str) -> String {
    let mut name = String::from("machine_id_");
    for c in id.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            name.push(c);
        } else {
            name.push_str(&format!("_X{:X}_", u32::from(c)));
        }
    }
    name
}

/// A token that tells this declaration's claim from any other's. Two declarations of one
/// id differ in where their literal is (file, line, column, and the compiler's byte range
/// in its `Debug`) and, when a macro of the user's writes both from one place, in the
/// expansion (the hygiene context in its `Debug`). Were two nonces ever equal, both
/// impls would be emitted, and the actions' lookups would be ambiguous again (E0283
/// beside the E0428): the error is still reported, in more words.
fn nonce(id: &syn::LitStr) -> Literal {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let span = id.span();
    let start = span.start();
    let place = format!("{:?} {:?} {} {}:{}", span, Span::call_site(), span.file(), start.line, start.column);
    let hash = place.bytes().fold(OFFSET, |hash, byte| (hash ^ u128::from(byte)).wrapping_mul(PRIME));
    Literal::u128_unsuffixed(hash)
}

#[cfg(test)]
mod tests {
    use super::claim_name;

    #[test]
    fn snake_case_ids_read_as_written() {
        assert_eq!(claim_name("invoice"), "machine_id_invoice");
        assert_eq!(claim_name("purchase_order2"), "machine_id_purchase_order2");
    }

    #[test]
    fn other_characters_are_escaped_into_an_identifier() {
        assert_eq!(claim_name("order-v2"), "machine_id_order_X2D_v2");
        assert_eq!(claim_name("Invoice"), "machine_id__X49_nvoice");
        assert_eq!(claim_name("façade"), "machine_id_fa_XE7_ade");
        assert_eq!(claim_name(""), "machine_id_");
        for id in ["a b", "a.b", "a/b", "é", "🧾", "A", "-"] {
            let name = claim_name(id);
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{id:?} -> {name}");
        }
    }

    #[test]
    fn ids_that_look_alike_get_names_of_their_own() {
        // Each pair would share a name under a naive encoding (`-` or uppercase dropped or
        // written as `_`, an escape written literally).
        let pairs = [
            ("a-b", "a_b"),
            ("a-b", "a_X2D_b"),
            ("a_X2D_b", "a_x2d_b"),
            ("Ab", "ab"),
            ("a_", "a-"),
            ("-_", "_-"),
            ("a--b", "a-_b"),
        ];
        for (one, other) in pairs {
            assert_ne!(claim_name(one), claim_name(other), "{one:?} and {other:?}");
        }
    }
}

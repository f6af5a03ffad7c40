//! What `machine!` emits: the machine's link-time registration, and the hidden
//! `macro_rules!` through which each `#[action]` checks its binding against it.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};

use super::MachineAst;
use crate::names::machine_checker;

pub(crate) fn expand(machine: &MachineAst, input: &TokenStream, errors: Vec<syn::Error>) -> TokenStream {
    if !errors.is_empty() {
        let errors = errors.into_iter().map(syn::Error::into_compile_error);
        // One permissive checker per distinct id: a repeated id is already an error.
        let ids: std::collections::BTreeSet<String> = machine.ids.iter().map(syn::LitStr::value).collect();
        let checkers = ids.iter().map(|id| permissive_checker(id));
        return quote! { #(#errors)* #(#checkers)* };
    }
    machine
        .ids
        .iter()
        .map(|id| {
            let checker = machine_checker(&id.value(), Span::call_site());
            let registration = registration(machine, &id.value());
            quote! {
                #[doc(hidden)]
                macro_rules! #checker {
                    ($($binding:tt)*) => {
                        // Shadows the action's "not declared" stand-in: the machine is in scope.
                        struct MachineInScope;
                        ::toolgate::__private::check_binding! { { #input } $($binding)* }
                    };
                }
                #[doc(hidden)]
                #[allow(unused_imports)]
                pub(crate) use #checker;
                #registration
            }
        })
        .collect()
}

/// A machine that does not parse: its error, plus a permissive checker when its `id` can
/// still be read, so its actions do not add "cannot find macro" errors to the real one.
pub(crate) fn unparsable(input: &TokenStream, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let checker = declared_id(input).map(|id| permissive_checker(&id));
    quote! { #error #checker }
}

/// An invalid machine's checker accepts every binding: one mistake, one error.
fn permissive_checker(id: &str) -> TokenStream {
    let checker = machine_checker(id, Span::call_site());
    quote! {
        #[doc(hidden)]
        macro_rules! #checker {
            ($($binding:tt)*) => { struct MachineInScope; };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #checker;
    }
}

/// The `id: "…"` of a declaration, read leniently from its top-level tokens.
fn declared_id(input: &TokenStream) -> Option<String> {
    let tokens: Vec<TokenTree> = input.clone().into_iter().collect();
    tokens.windows(3).find_map(|w| match w {
        [TokenTree::Ident(key), TokenTree::Punct(colon), TokenTree::Literal(lit)]
            if key == "id" && colon.as_char() == ':' =>
        {
            syn::parse2::<syn::LitStr>(lit.to_token_stream()).ok().map(|l| l.value())
        }
        _ => None,
    })
}

fn registration(machine: &MachineAst, id: &str) -> TokenStream {
    let spec = machine.spec_for(id);
    let id = &spec.id;
    let initial = spec.initial.clone().unwrap_or_default();
    let key = match &spec.key {
        Some(key) => quote!(::core::option::Option::Some(#key)),
        None => quote!(::core::option::Option::None),
    };
    let states = spec.states.iter().map(|state| {
        let name = &state.name;
        let is_final = state.is_final;
        let on = state.on.iter().map(|t| {
            let (event, target) = (&t.event, &t.target);
            quote! { (#event, #target) }
        });
        quote! {
            ::toolgate::__private::StateRegistration { name: #name, is_final: #is_final, on: &[#(#on),*] }
        }
    });
    quote! {
        ::toolgate::__private::inventory::submit! {
            ::toolgate::__private::MachineRegistration {
                id: #id,
                initial: #initial,
                key: #key,
                states: &[#(#states),*],
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

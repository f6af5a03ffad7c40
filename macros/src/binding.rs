//! The compile-time link between an `#[action]` and its machine, without names: the
//! machine's id written as a type (`&MachineId<KEY>`), which `machine!` implements
//! `MachineDeclared` for and `#[action]` looks up. See the runtime's
//! `action::declared` for why this works from any module and in any order. Each id is
//! also claimed crate-wide (`claim`), so that two declarations of one id are one error.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned};

mod claim;
use claim::claim;

/// `::toolgate::__private::MachineId<KEY>` for `id`, spanned at `span`.
pub(crate) fn machine_id(id: &str, span: Span) -> TokenStream {
    let key = key(id, span);
    quote_spanned!(span=> ::toolgate::__private::MachineId<#key>)
}

/// The value `::toolgate::__private::MachineId::<KEY>` for `id`, spanned at `span`.
fn machine_id_value(id: &str, span: Span) -> TokenStream {
    let key = key(id, span);
    quote_spanned!(span=> ::toolgate::__private::MachineId::<#key>)
}

/// The id's 128-bit FNV-1a hash: short wherever rustc prints the type, unlike the id
/// spelled out as a tuple of characters. The action compares the id it finds with its
/// own, so a collision could not pass for the machine.
fn key(id: &str, span: Span) -> Literal {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let hash = id.bytes().fold(OFFSET, |hash, byte| (hash ^ u128::from(byte)).wrapping_mul(PRIME));
    let mut key = Literal::u128_unsuffixed(hash);
    key.set_span(span);
    key
}

/// What `machine!` emits for one id: the impl through which actions find the machine,
/// emitted only if this declaration is the one the crate keeps for its id (`claim`).
/// Spanned at the id's literal. `machine` is `None` for a declaration with errors, whose
/// actions are not checked.
pub(crate) fn declaration(id: &syn::LitStr, machine: Option<&toolgate_machine::MachineSpec>) -> TokenStream {
    let span = id.span();
    let ty = machine_id(&id.value(), span);
    let value = id.value();
    let declared = match machine {
        Some(spec) => {
            let key = match &spec.key {
                Some(key) => quote!(::core::option::Option::Some(#key)),
                None => quote!(::core::option::Option::None),
            };
            let states = spec.states.iter().map(|state| {
                let name = &state.name;
                let on = state.on.iter().map(|t| {
                    let (event, target) = (&t.event, &t.target);
                    quote!((#event, #target))
                });
                quote!(::toolgate::__private::DeclaredState { name: #name, on: &[#(#on),*] })
            });
            quote! {
                ::toolgate::__private::DeclaredMachine { id: #value, key: #key, states: &[#(#states),*], checked: true }
            }
        }
        None => quote! {
            ::toolgate::__private::DeclaredMachine { id: #value, key: ::core::option::Option::None, states: &[], checked: false }
        },
    };
    let declaration = quote_spanned! {span=>
        // Public, though nameable nowhere: an action in another module infers it.
        #[doc(hidden)]
        #[allow(dead_code, unreachable_pub, missing_docs)]
        #[derive(::core::fmt::Debug)]
        pub struct Declaration;
        impl<'a> ::toolgate::__private::MachineDeclared<Declaration> for &'a #ty {
            const MACHINE: ::toolgate::__private::DeclaredMachine = #declared;
        }
    };
    claim(id, declaration)
}

/// What `#[action]` emits to check its binding: the machine looked up by id, spanned at
/// the literal naming it (the `machine` key, or the `domain` it defaults to), then one
/// `const` per literal that panics at compile time with the problem, spanned at that
/// literal.
pub(crate) fn check(
    machine: &syn::LitStr,
    bind_states: &[syn::LitStr],
    transition: Option<&syn::LitStr>,
    handler: &syn::Ident,
    takes_input: bool,
) -> TokenStream {
    let value_ty = machine_id_value(&machine.value(), machine.span());
    let id = machine.value();
    // Spanned at the literal, in the macro's context: where two declarations of the id
    // make it ambiguous, rustc then suggests no rewrite of the user's attribute.
    let probe_span = Span::mixed_site().located_at(machine.span());
    let probe = quote_spanned! {probe_span=>
        ::toolgate::__private::declared_machine(&|| (&&#value_ty).machine())
    };
    let lookup = quote_spanned! {machine.span()=>
        #[allow(unused_imports)]
        use ::toolgate::__private::{MachineDeclared as _, UndeclaredMachine as _};
        const FOUND: ::core::option::Option<::toolgate::__private::DeclaredMachine> = match #probe {
            ::core::option::Option::Some(machine) if machine.is(#id) => ::core::option::Option::Some(machine),
            _ => ::core::option::Option::None,
        };
        const _: () = if FOUND.is_none() {
            ::core::panic!("{}", ::toolgate::__private::DeclaredMachine::undeclared(#id).as_str())
        };
        const MACHINE: ::toolgate::__private::DeclaredMachine = match FOUND {
            ::core::option::Option::Some(machine) => machine,
            ::core::option::Option::None => ::toolgate::__private::DeclaredMachine::unchecked(#id),
        };
    };
    let fail = |span: Span, check: TokenStream| {
        quote_spanned! {span=>
            const _: () = if let ::core::option::Option::Some(problem) = #check {
                ::core::panic!("{}", problem.as_str())
            };
        }
    };
    let mut checks: Vec<TokenStream> =
        bind_states.iter().map(|state| fail(state.span(), quote!(MACHINE.check_state(#state)))).collect();
    if let Some(event) = transition {
        checks.push(fail(event.span(), quote!(MACHINE.check_event(#event))));
        checks
            .extend(bind_states.iter().map(|state| fail(event.span(), quote!(MACHINE.check_accepts(#state, #event)))));
    }
    checks.push(fail(handler.span(), quote!(MACHINE.check_input(#takes_input))));
    quote! {
        #lookup
        #(#checks)*
    }
}

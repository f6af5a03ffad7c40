//! What `machine!` emits: the machine's link-time registration, and for each id the
//! trait impl through which `#[action]`s find it at compile time (`crate::binding`), and
//! the checks of its guards (`super::guard`).

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens, quote};

use super::{MachineAst, guard};
use crate::binding::declaration;

pub(crate) fn expand(machine: &MachineAst, errors: Vec<syn::Error>) -> TokenStream {
    if !errors.is_empty() {
        let errors = errors.into_iter().map(syn::Error::into_compile_error);
        // An invalid machine is still declared, unchecked: its actions add no errors to
        // its own. One declaration per distinct id: a repeated id is already an error.
        let mut seen = std::collections::BTreeSet::new();
        let declarations = machine.ids.iter().filter(|id| seen.insert(id.value())).map(|id| declaration(id, None));
        return quote! { #(#errors)* #(#declarations)* };
    }
    machine
        .ids
        .iter()
        .map(|id| {
            let spec = machine.spec_for(&id.value());
            let declaration = declaration(id, Some(&spec));
            let registration = registration(&spec, machine, &guard::guards(machine));
            quote! { #declaration #registration }
        })
        .chain(std::iter::once(guard::checks(machine, &guard::guards(machine))))
        .collect()
}

/// A machine that does not parse: its error, plus an unchecked declaration when its `id`
/// can still be read, so its actions do not add "no machine … is declared" errors to the
/// real one.
pub(crate) fn unparsable(input: &TokenStream, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let declaration = declared_id(input).map(|id| declaration(&id, None));
    quote! { #error #declaration }
}

/// The `id: "…"` of a declaration, read leniently from its top-level tokens.
fn declared_id(input: &TokenStream) -> Option<syn::LitStr> {
    let tokens: Vec<TokenTree> = input.clone().into_iter().collect();
    tokens.windows(3).find_map(|w| match w {
        [TokenTree::Ident(key), TokenTree::Punct(colon), TokenTree::Literal(lit)]
            if key == "id" && colon.as_char() == ':' =>
        {
            syn::parse2::<syn::LitStr>(lit.to_token_stream()).ok()
        }
        _ => None,
    })
}

fn registration(spec: &toolgate_machine::MachineSpec, machine: &MachineAst, guards: &[&syn::LitStr]) -> TokenStream {
    let context = machine.context.as_ref();
    let guards = guards.iter().map(|guard| guard::registration(guard, context));
    // What a context must be is checked here, spanned at the type.
    let (context, context_check) = match context {
        Some(ty) => (
            quote::quote_spanned! {syn::spanned::Spanned::span(ty)=>
                ::core::option::Option::Some(::toolgate::__private::ContextType::of::<#ty>())
            },
            quote::quote_spanned! {syn::spanned::Spanned::span(ty)=>
                const _: () = {
                    fn context_type<T: ::toolgate::__private::InstanceContext>() {}
                    let _ = context_type::<#ty>;
                };
            },
        ),
        None => (quote!(::core::option::Option::None), quote!()),
    };
    let id = &spec.id;
    let initial = spec.initial.clone().unwrap_or_default();
    let key = match &spec.key {
        Some(key) => quote!(::core::option::Option::Some(#key)),
        None => quote!(::core::option::Option::None),
    };
    let tenant_scoped = spec.tenant_scoped;
    let principal_owned = spec.principal_owned;
    let mint = match &spec.mint {
        Some(format) => quote!(::core::option::Option::Some(#format)),
        None => quote!(::core::option::Option::None),
    };
    let states = spec.states.iter().zip(&machine.states).map(|(state, written)| {
        let name = &state.name;
        let (entry, exit) = (effects(&written.entry), effects(&written.exit));
        let is_final = state.is_final;
        let on = state.on.iter().map(|t| {
            let (event, target) = (&t.event, &t.target);
            let guard = match &t.guard {
                Some(guard) => quote!(::core::option::Option::Some(#guard)),
                None => quote!(::core::option::Option::None),
            };
            let reenter = t.reenter;
            quote! { (#event, #target, #guard, #reenter) }
        });
        let after = state.after.iter().map(|d| {
            let (after_ms, target) = (d.after_ms, &d.target);
            quote! { (#after_ms, #target) }
        });
        quote! {
            ::toolgate::__private::StateRegistration {
                name: #name, is_final: #is_final, on: &[#(#on),*], after: &[#(#after),*],
                entry: &[#(#entry),*], exit: &[#(#exit),*],
            }
        }
    });
    quote! {
        #context_check
        ::toolgate::__private::inventory::submit! {
            ::toolgate::__private::MachineRegistration {
                id: #id,
                initial: #initial,
                key: #key,
                tenant_scoped: #tenant_scoped,
                principal_owned: #principal_owned,
                mint: #mint,
                states: &[#(#states),*],
                context: #context,
                guards: &[#(#guards),*],
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

/// Each effect a state's `entry` or `exit` names, as `(name, function)`: the function
/// referred to at its literal, so an unknown name, or a function that is not an
/// `async fn(EffectCall) -> Result<(), EffectError>`, is an error there.
fn effects(named: &[syn::LitStr]) -> Vec<TokenStream> {
    named
        .iter()
        .map(|literal| {
            let name = literal.value();
            let function: syn::Path = literal.parse().unwrap_or_else(|_| syn::parse_quote!(invalid_effect_name));
            quote::quote_spanned! {literal.span()=>
                (#name, {
                    fn effect(call: ::toolgate::__private::EffectCall) -> ::toolgate::__private::Attempt {
                        ::std::boxed::Box::pin(#function(call))
                    }
                    effect as ::toolgate::__private::EffectFnPtr
                })
            }
        })
        .collect()
}

//! What `#[action]` emits: the user's function unchanged, its link-time registration,
//! and (for bound actions) the compile-time check of its binding against its machine.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Action;
use crate::names::machine_checker;

pub(crate) fn expand(function: &syn::ItemFn, action: &Action) -> TokenStream {
    let mut out = function.to_token_stream();
    out.extend(registration(action));
    out.extend(binding_check(action));
    out
}

fn registration(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let span = ident.span();
    let (name, description) = (&action.name, &action.description);
    let domain = option(action.domain.clone());
    let machine = option(action.explicit_machine.clone());
    let not_for = option(action.not_for.clone());
    let bind_states = action.bind_states.iter().map(|s| s.value());
    let transition = option(action.transition.as_ref().map(|t| t.value()));
    let compact = option(action.compact.clone());
    let timeout_ms = match action.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let handler = handler(action);
    let states = action.params.states.iter().map(|(_, inner)| {
        quote_spanned! {inner.span()=>
            ::toolgate::__private::StateRequirement {
                id: || ::core::any::TypeId::of::<#inner>(),
                name: || ::core::any::type_name::<#inner>(),
            }
        }
    });
    quote_spanned! {span=>
        ::toolgate::__private::inventory::submit! {
            ::toolgate::__private::ActionRegistration {
                name: #name,
                domain: #domain,
                machine: #machine,
                bind_states: &[#(#bind_states),*],
                transition: #transition,
                description: #description,
                compact: #compact,
                not_for: #not_for,
                timeout_ms: #timeout_ms,
                states: &[#(#states),*],
                handler: &const { #handler },
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

/// The erased handler. Without `State<T>` parameters, the user's function itself; with
/// them, a closure that extracts each state from the context, then calls it.
fn handler(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let ctx = action.params.ctx;
    // Spanned at the context parameter's type: a wrong type fails `IsCtx` right there.
    let ctx_span = ctx.span();
    let constructor = match action.takes_input {
        true => quote_spanned!(ctx_span=> ::toolgate::__private::WithInput::new),
        false => quote_spanned!(ctx_span=> ::toolgate::__private::WithoutInput::new),
    };
    if action.params.states.is_empty() {
        return quote_spanned!(ctx_span=> #constructor(#ident));
    }
    let names: Vec<syn::Ident> = (0..action.params.states.len()).map(|i| quote::format_ident!("state_{}", i)).collect();
    let extract = action.params.states.iter().zip(&names).map(|((ty, _), name)| {
        quote_spanned! {ty.span()=> let #name = <#ty>::from_ctx(&ctx)?; }
    });
    let call_ctx = quote_spanned!(ctx_span=> <#ctx as ::toolgate::__private::IsCtx>::from_ctx(ctx));
    match action.params.input {
        Some(input) => quote_spanned! {ctx_span=>
            #constructor(|input: #input, ctx: ::toolgate::Ctx| async move {
                #(#extract)*
                #ident(input, #(#names,)* #call_ctx).await
            })
        },
        None => quote_spanned! {ctx_span=>
            #constructor(|ctx: ::toolgate::Ctx| async move {
                #(#extract)*
                #ident(#(#names,)* #call_ctx).await
            })
        },
    }
}

fn option(value: Option<String>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// Forwards the literals, with their spans, to the machine's checker macro.
fn binding_check(action: &Action) -> TokenStream {
    let Some(machine) = &action.machine else { return TokenStream::new() };
    if action.bind_states.is_empty() || action.startup_checked {
        return TokenStream::new();
    }
    let checker = machine_checker(&machine.value(), machine.span());
    let states = &action.bind_states;
    let transition = action.transition.as_ref().map(|t| quote!(transition = #t));
    let (handler, input) = (action.handler.ident(), action.takes_input);
    quote! {
        #checker! { machine = #machine handler = #handler input = #input bind_state = [#(#states),*] #transition }
    }
}

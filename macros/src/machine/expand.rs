//! What `machine!` emits: the machine's link-time registration, and the hidden
//! `macro_rules!` through which each `#[action]` checks its binding against it.

use proc_macro2::TokenStream;
use quote::quote;

use super::MachineAst;
use crate::names::machine_checker;

pub(crate) fn expand(machine: &MachineAst, input: &TokenStream, errors: Vec<syn::Error>) -> TokenStream {
    let checker = machine_checker(&machine.id.value(), proc_macro2::Span::call_site());
    // An invalid machine still defines its checker, accepting every binding, so its
    // actions do not drown the real error in "cannot find macro" ones.
    let forward = if errors.is_empty() {
        quote! { ::toolgate::__private::check_binding! { { #input } $($binding)* } }
    } else {
        quote! {}
    };
    let errors = errors.into_iter().map(syn::Error::into_compile_error);
    let registration = registration(machine);
    quote! {
        #(#errors)*
        #[doc(hidden)]
        macro_rules! #checker {
            ($($binding:tt)*) => { #forward };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #checker;
        #registration
    }
}

fn registration(machine: &MachineAst) -> TokenStream {
    let spec = machine.spec();
    let id = &spec.id;
    let initial = spec.initial.clone().unwrap_or_default();
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
                states: &[#(#states),*],
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

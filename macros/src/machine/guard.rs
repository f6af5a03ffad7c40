//! A machine's guards: each names a function, which the registration refers to at the
//! guard's literal. A guard whose name rustc would report as unresolved (an identifier,
//! or a path through modules) is looked up beside a stand-in instead, and a `const`
//! spanned at the literal panics with toolgate's message when the name reaches the
//! stand-in: rustc's own error would offer to replace the string with a bare identifier.
//! (`toolgate_runtime::action::probe` has the mechanism.)

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};

use super::MachineAst;

/// Each guard the machine names, once, at its first literal.
pub(crate) fn guards(machine: &MachineAst) -> Vec<&syn::LitStr> {
    let mut guards: Vec<&syn::LitStr> = Vec::new();
    let named = machine.states.iter().flat_map(|s| s.on.iter().flat_map(|(_, branches)| branches.iter()));
    for guard in named.filter_map(|b| b.guard.as_ref()) {
        if !guards.iter().any(|g| g.value() == guard.value()) {
            guards.push(guard);
        }
    }
    guards
}

/// A guard's name split where a stand-in can stand for it: the module it is looked up in
/// (`None`: the machine's) and the function's name. `None` for a path through something
/// other than modules (`Payment::within`, by the naming convention of types), which is
/// referred to as written.
struct Lookup {
    module: Option<syn::Path>,
    name: syn::Ident,
}

impl Lookup {
    fn of(guard: &syn::LitStr) -> Option<Self> {
        let mut path = path(guard);
        let last = path.segments.pop()?;
        let through_modules = path.segments.iter().all(|segment| {
            let ident = segment.ident.to_string();
            segment.arguments.is_none()
                && (matches!(ident.as_str(), "self" | "super" | "crate")
                    || ident.chars().next().is_some_and(|c| c.is_lowercase()))
        });
        if !last.arguments.is_none() || !through_modules {
            return None;
        }
        let module = (!path.segments.is_empty()).then(|| {
            path.segments.pop_punct();
            path
        });
        // Parsed from the literal, the name is spanned at it.
        Some(Self { module, name: last.ident })
    }

    /// A stand-in with the function's name, reached only where the name reaches no
    /// function: a function pointer of the guard's type whose input is `NoGuard`.
    fn stand_in(&self, context: &TokenStream) -> TokenStream {
        let name = &self.name;
        quote_spanned! {name.span()=>
            #[allow(dead_code, non_upper_case_globals)]
            const #name: for<'a, 'b> fn(&'a #context, &'b ::toolgate::__private::NoGuard)
                -> ::core::result::Result<(), ::toolgate::__private::Failure> = ::toolgate::__private::no_guard::<#context>;
        }
    }

    /// `within` resolved in its module, where it shadows the stand-in above: `inner` sees
    /// the module's items by a glob import.
    fn resolved(&self, context: &TokenStream, inner: TokenStream) -> TokenStream {
        let stand_in = self.stand_in(context);
        let glob = match &self.module {
            Some(module) => quote_spanned!(self.name.span()=> use #module::*;),
            None => quote_spanned!(self.name.span()=> use self::*;),
        };
        quote! {{
            #stand_in
            {
                #[allow(unused_imports)]
                #glob
                #inner
            }
        }}
    }
}

/// The machine's context type, `()` without one.
fn context_type(context: Option<&syn::Type>) -> TokenStream {
    match context {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    }
}

/// The guard's name as a path (the machine's validation already refused one that is not).
fn path(guard: &syn::LitStr) -> syn::Path {
    guard.parse().unwrap_or_else(|_| syn::parse_quote!(invalid_guard_name))
}

/// A guard's registration: its function, erased, referred to at the guard's literal, where
/// rustc reports a function that does not take the machine's context.
pub(crate) fn registration(guard: &syn::LitStr, context: Option<&syn::Type>) -> TokenStream {
    let span = guard.span();
    let name = guard.value();
    let context = context_type(context);
    // Spanned at the literal: a function that is no guard on the context (`GuardFn`) is
    // reported there.
    let judge = |function: TokenStream| {
        quote_spanned! {span=>
            |context, input, caller| ::toolgate::__private::judge_guard::<#context, _, _>(&#function, context, input, caller)
        }
    };
    let judge = match Lookup::of(guard) {
        Some(lookup) => lookup.resolved(&context, judge(lookup.name.to_token_stream())),
        None => judge(path(guard).to_token_stream()),
    };
    quote_spanned! {span=>
        ::toolgate::__private::GuardRegistration { name: #name, judge: #judge }
    }
}

/// The check of each guard a stand-in can stand for: a `const`, spanned at its literal,
/// that panics when the name reaches the stand-in rather than a function.
pub(crate) fn checks(machine: &MachineAst, guards: &[&syn::LitStr]) -> TokenStream {
    let context = context_type(machine.context.as_ref());
    let shown = context_shown(machine.context.as_ref());
    let checks = guards.iter().filter_map(|guard| Some((guard, Lookup::of(guard)?))).map(|(guard, lookup)| {
        let (name, written) = (&lookup.name, guard.value());
        let place = match &lookup.module {
            Some(module) => format!("in `{}`", module.to_token_stream().to_string().replace(' ', "")),
            None => "in the module of this `machine!`".to_string(),
        };
        let elsewhere = match &lookup.module {
            Some(_) => String::new(),
            None => format!(", or write the path of one elsewhere, as in \"rules::{written}\""),
        };
        let message = format!(
            "guard \"{written}\" names no function {place}: declare or import a \
             `fn(&{shown}, &Input) -> Result<(), Failure>` (or `fn(&{shown}, &Input, &Caller) -> \
             Result<(), Failure>`, to judge who calls) named `{name}` there (`Input`: the input of \
             the actions whose transition it guards){elsewhere}"
        );
        let check = quote_spanned! {guard.span()=>
            const _: () = if !::toolgate::__private::answer(&|| {
                #[allow(unused_imports)]
                use ::toolgate::__private::{GuardFound as _, GuardMissing as _};
                (&&::toolgate::__private::Probe(#name)).guard()
            }) {
                ::core::panic!(#message)
            };
        };
        let resolved = lookup.resolved(&context, check);
        quote! { const _: () = #resolved; }
    });
    quote! { #(#checks)* }
}

/// The context type as a user reads it in a message (`Payment`, `Vec<Payment>`, `()`).
fn context_shown(context: Option<&syn::Type>) -> String {
    let Some(ty) = context else { return "()".to_string() };
    let text = ty.to_token_stream().to_string();
    let mut shown = String::new();
    for part in text.split(' ') {
        let glued = matches!(part, "<" | ">" | "::" | "," | ")" | "]") || shown.ends_with(['<', ':', '(', '[', '&']);
        if !shown.is_empty() && !glued {
            shown.push(' ');
        }
        shown.push_str(part);
    }
    shown.replace(',', ", ")
}

//! What `#[action]` emits: the user's function unchanged, its link-time registration,
//! and (for bound actions) the compile-time check of its binding against its machine.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Action;
use crate::names::machine_checker;

pub(crate) fn expand(function: &syn::ItemFn, action: &Action) -> TokenStream {
    let mut out = function.to_token_stream();
    let ident = action.handler.ident();
    // A named `const` is an item both in a module and in an `impl` block, where inventory's
    // `const _` is not. Its name is unique per handler and line, and reads right where
    // rustc shows it ("required by a bound in `view_registration_at_line_12::view`").
    let line = ident.span().start().line;
    let holder = quote::format_ident!("{}_registration_at_line_{}", ident, line);
    let free_function_only = free_function_only(action);
    let registration = registration(action);
    let binding_check = binding_check(action);
    out.extend(quote! {
        #[doc(hidden)]
        #[allow(dead_code, non_upper_case_globals)]
        const #holder: () = {
            #free_function_only
            {
                // The enclosing module's items, searched before the fallback above: a free
                // function's name finds the function itself.
                #[allow(unused_imports)]
                use self::*;
                #registration
            }
            #binding_check
        };
    });
    out
}

/// A stand-in with the handler's name and arity, found only where the name does not
/// reach a free function: on an associated function inside an `impl` block. Calling it
/// fails one bound whose message says to move the function out.
fn free_function_only(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let output = action.params.output;
    let arity = usize::from(action.params.input.is_some()) + action.params.states.len() + 1;
    let generics: Vec<syn::Ident> = (0..arity).map(|i| quote::format_ident!("A{}", i)).collect();
    let first = &generics[0];
    quote_spanned! {ident.span()=>
        #[allow(dead_code, clippy::extra_unused_type_parameters)]
        fn #ident<#(#generics),*>(#(_: #generics),*) -> ::core::future::Pending<::core::result::Result<#output, ::toolgate::ToolError>>
        where
            #first: ::toolgate::FreeFunction,
        {
            ::core::future::pending()
        }
    }
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
    let allow_unknown_fields = action.allow_unknown_fields;
    let rate_limit = match action.rate_limit {
        Some(rate) => {
            let (calls, per_ms) = (rate.calls, rate.per_ms);
            let per = quote::format_ident!("{}", format!("{:?}", rate.per));
            quote!(::core::option::Option::Some(::toolgate::__private::RateLimit {
                calls: #calls,
                per_ms: #per_ms,
                per: ::toolgate::__private::RatePer::#per,
            }))
        }
        None => quote!(::core::option::Option::None),
    };
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
                allow_unknown_fields: #allow_unknown_fields,
                rate_limit: #rate_limit,
                states: &[#(#states),*],
                handler: #handler,
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

/// The erased handler: the input and output types checked once each (spanned at the
/// user's types), and a call function that reads the input, extracts each `State<T>`,
/// calls the user's function with its context, and writes the output.
fn handler(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let params = &action.params;
    let (output, ctx, return_type) = (params.output, params.ctx, params.return_type);
    let input_io = match params.input {
        Some(input) => quote_spanned!(input.span()=>
            const INPUT: ::toolgate::__private::InputIo<#input> = <#input as ::toolgate::ActionInput>::IO;
        ),
        None => quote!(
            const INPUT: ::toolgate::__private::InputIo<()> = ::toolgate::__private::InputIo::none();
        ),
    };
    let output_io = quote_spanned!(output.span()=>
        const OUTPUT: ::toolgate::__private::OutputIo<#output> = <#output as ::toolgate::ActionOutput>::IO;
    );
    let names: Vec<syn::Ident> = (0..params.states.len()).map(|i| quote::format_ident!("state_{}", i)).collect();
    let extract = params.states.iter().zip(&names).map(|((ty, _), name)| {
        quote_spanned! {ty.span()=> let #name = <#ty>::from_ctx(&ctx)?; }
    });
    let input_arg = params.input.map(|_| quote!(input,));
    // Spanned at the user's context type: a wrong type fails `IsCtx` right there, once.
    let call_ctx = quote_spanned!(ctx.span()=> <#ctx as ::toolgate::IsCtx>::from_ctx(ctx));
    let run = quote_spanned!(return_type.span()=> #ident(#input_arg #(#names,)* #call_ctx).await?);
    quote! {{
        #input_io
        #output_io
        fn call(arguments: ::toolgate::__private::Arguments, ctx: ::toolgate::Ctx) -> ::toolgate::__private::Called {
            ::std::boxed::Box::pin(async move {
                #[allow(unused_variables)]
                let input = (INPUT.parse)(arguments)?;
                #(#extract)*
                let output = #run;
                (OUTPUT.render)(output)
            })
        }
        ::toolgate::__private::Handler { input_schema: INPUT.schema, output_schema: OUTPUT.schema, call }
    }}
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
    // Where the checker is not in scope rustc says "cannot find macro"; this stand-in,
    // glob-imported so the checker's own `MachineInScope` shadows it, adds what to write.
    let id = machine.value();
    let note = format!(
        "machine `{id}` is not declared where this action can see it: declare it with \
         `toolgate::machine! {{ id: \"{id}\", … }}` earlier in this module or in a parent module \
         before this one, import it from its module (`use crate::that_module::*;`), or mark the \
         action `startup_checked` if the machine is loaded at start-up"
    );
    let stand_in = quote::format_ident!("MachineInScope", span = machine.span());
    quote! {{
        mod undeclared {
            #[deprecated(note = #note)]
            pub(super) struct MachineInScope;
        }
        #[allow(unused_imports)]
        use undeclared::*;
        #checker! { machine = #machine handler = #handler input = #input bind_state = [#(#states),*] #transition }
        let _ = #stand_in;
    }}
}

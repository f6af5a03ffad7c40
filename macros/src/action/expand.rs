//! What `#[action]` emits: the user's function unchanged, its link-time registration,
//! the compile-time check that it is at module level, and (for bound actions) the one of
//! its binding against its machine.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;

use super::validate::Action;

pub(crate) fn expand(function: &syn::ItemFn, action: &Action) -> TokenStream {
    let mut out = function.to_token_stream();
    let ident = action.handler.ident();
    // One named `const` holds everything: a named `const` is an item in a module, in a
    // function body and in an `impl` block alike (where a `const _` is not), so an action
    // in an `impl` block gets the placement's one error. The holder is named for the
    // function, in capitals; the consts inside it are evaluated wherever it stands.
    let name = ident.to_string();
    let holder = quote::format_ident!("ACTION_{}", name.trim_start_matches("r#").to_uppercase(), span = ident.span());
    let stand_in = stand_in(action);
    let placement = placement(action);
    let registration = registration(action);
    let binding_check = binding_check(action);
    out.extend(quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        const #holder: () = {
            #stand_in
            {
                // The enclosing module's items, searched before the stand-in above: a
                // free function's name finds the function itself.
                #[allow(unused_imports)]
                use self::*;
                #placement
                #binding_check
                #registration
            }
        };
    });
    out
}

/// A stand-in with the handler's name and arity, found only where the name does not
/// reach a module-level function: on an associated function inside an `impl` block, or a
/// function in a function body. It returns a `StandIn`, which the placement check tells
/// apart from the handler's own future.
fn stand_in(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let output = action.params.output;
    let arity = usize::from(action.params.input.is_some()) + action.params.extracted.len();
    let generics: Vec<syn::Ident> = (0..arity).map(|i| quote::format_ident!("A{}", i)).collect();
    quote_spanned! {ident.span()=>
        #[allow(dead_code)]
        fn #ident<#(#generics),*>(#(_: #generics),*) -> ::toolgate::__private::StandIn<::core::result::Result<#output, ::toolgate::__private::ToolError>> {
            ::toolgate::__private::StandIn::new()
        }
    }
}

/// The action's placement, checked by const evaluation at the function's name: what the
/// name reaches is called (in a closure never run, with arguments that never exist), and
/// the stand-in's result makes the `const` panic with toolgate's message.
fn placement(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let arity = usize::from(action.params.input.is_some()) + action.params.extracted.len();
    let arguments = (0..arity).map(|_| quote!(loop {}));
    quote_spanned! {ident.span()=>
        #[allow(unreachable_code, clippy::diverging_sub_expression)]
        const _: () = if !::toolgate::__private::answer(&|| {
            #[allow(unused_imports)]
            use ::toolgate::__private::{AtModuleLevel as _, NotAtModuleLevel as _};
            (&&::toolgate::__private::Probe(#ident(#(#arguments),*))).placement()
        }) {
            ::core::panic!("{}", ::toolgate::__private::NOT_AT_MODULE_LEVEL)
        };
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
    let states = action.params.extracted.iter().map(|ty| {
        quote_spanned! {ty.span()=> <#ty as ::toolgate::__private::FromCtx>::STATE }
    });
    let contexts = action.params.extracted.iter().map(|ty| {
        quote_spanned! {ty.span()=> <#ty as ::toolgate::__private::FromCtx>::CONTEXT }
    });
    let needs_principal = action.params.extracted.iter().map(|ty| {
        quote_spanned! {ty.span()=> <#ty as ::toolgate::__private::FromCtx>::NEEDS_PRINCIPAL }
    });
    let parameters = action.params.extracted.iter().map(|ty| {
        quote_spanned! {ty.span()=> ::core::any::TypeId::of::<#ty> }
    });
    let transactional = action.transactional;
    let expensive = action.expensive;
    let creates = action.creates;
    let idempotency_key = option(action.idempotency_key.clone());
    let confirm = match &action.confirm {
        None => quote!(::core::option::Option::None),
        Some(above) => {
            let above = match above {
                Some((field, amount, currency)) => quote!(::core::option::Option::Some(
                    ::toolgate::__private::ConfirmAbove { field: #field, amount: #amount, currency: #currency }
                )),
                None => quote!(::core::option::Option::None),
            };
            quote!(::core::option::Option::Some(::toolgate::__private::ConfirmPolicy { above: #above }))
        }
    };
    let scopes = &action.scopes;
    let task = match action.task {
        None => quote!(::toolgate::__private::TaskSupport::Never),
        Some(false) => quote!(::toolgate::__private::TaskSupport::Optional),
        Some(true) => quote!(::toolgate::__private::TaskSupport::Required),
    };
    quote_spanned! {span=>
        ::toolgate::__private::inventory::submit! {
            ::toolgate::__private::ActionRegistration {
                name: #name,
                domain: #domain,
                machine: #machine,
                bind_states: &[#(#bind_states),*],
                transition: #transition,
                creates: #creates,
                description: #description,
                compact: #compact,
                not_for: #not_for,
                timeout_ms: #timeout_ms,
                allow_unknown_fields: #allow_unknown_fields,
                rate_limit: #rate_limit,
                transactional: #transactional,
                expensive: #expensive,
                confirm: #confirm,
                idempotency_key: #idempotency_key,
                task: #task,
                scopes: &[#(#scopes),*],
                needs_principal: false #(|| #needs_principal)*,
                parameters: &[#(#parameters),*],
                states: &[#(#states),*],
                contexts: &[#(#contexts),*],
                handler: #handler,
                location: ::toolgate::__private::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    }
}

/// The erased handler: the input and output types checked once each (spanned at the
/// user's types), and a call function that reads the input, fills in every other
/// parameter through `FromCtx` (spanned at its type), calls the user's function, and
/// writes the output.
fn handler(action: &Action) -> TokenStream {
    let ident = action.handler.ident();
    let params = &action.params;
    let (output, return_type) = (params.output, params.return_type);
    let input_io = match params.input {
        Some(input) => quote_spanned!(input.span()=>
            const INPUT: ::toolgate::__private::InputIo<#input> = <#input as ::toolgate::__private::ActionInput>::IO;
        ),
        None => quote!(
            const INPUT: ::toolgate::__private::InputIo<()> = ::toolgate::__private::InputIo::none();
        ),
    };
    let output_io = quote_spanned!(output.span()=>
        const OUTPUT: ::toolgate::__private::OutputIo<#output> = <#output as ::toolgate::__private::ActionOutput>::IO;
    );
    let names: Vec<syn::Ident> = (0..params.extracted.len()).map(|i| quote::format_ident!("param_{}", i)).collect();
    let extract = params.extracted.iter().zip(&names).map(|(ty, name)| {
        quote_spanned! {ty.span()=> let #name = <#ty as ::toolgate::__private::FromCtx>::from_ctx(&ctx)?; }
    });
    let input_arg = params.input.map(|_| quote!(input,));
    // The call at the function's name (where a stand-in's bound is reported), its
    // `.await?` at the return type (where a wrong one is).
    let call = quote_spanned!(ident.span()=> #ident(#input_arg #(#names),*));
    let run = quote_spanned!(return_type.span()=> #call.await?);
    quote! {{
        #input_io
        #output_io
        #[allow(unused_variables)]
        fn call(arguments: ::toolgate::__private::Arguments, ctx: ::toolgate::__private::Ctx) -> ::toolgate::__private::Called {
            ::std::boxed::Box::pin(async move {
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

/// The binding checked at compile time against the machine `machine!` declares (see
/// `crate::binding`); nothing for an unbound action or one checked at start-up.
fn binding_check(action: &Action) -> TokenStream {
    let Some(machine) = &action.machine else { return TokenStream::new() };
    if action.bind_states.is_empty() || action.startup_checked {
        return TokenStream::new();
    }
    crate::binding::check(
        machine,
        &action.bind_states,
        action.transition.as_ref(),
        action.handler.ident(),
        action.takes_input,
    )
}

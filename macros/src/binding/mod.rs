//! `__check_binding!`: an action's `bind_state` / `transition` against its machine.
//!
//! `machine!` defines a `macro_rules!` per machine that forwards the machine's
//! declaration here together with the tokens `#[action]` passes it. Those tokens keep the
//! spans of the user's literals, so each error lands on the literal that causes it.
//!
//! Input: `{ <machine declaration> } machine = "id" handler = fn_name input = true
//! bind_state = ["a", …] transition = "EVENT"`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{LitStr, Token, braced, bracketed, punctuated::Punctuated};
use toolgate_machine::BindingError;

use crate::machine::MachineAst;

struct BindingInput {
    machine: MachineAst,
    /// The machine id the action asked for (checkers are shared by ids that sanitize alike).
    wanted: Option<LitStr>,
    /// The handler's name (where a keyed machine's missing input is reported) and whether
    /// it takes an input.
    handler: Option<syn::Ident>,
    takes_input: bool,
    bind_states: Vec<LitStr>,
    transition: Option<LitStr>,
}

impl Parse for BindingInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let content;
        braced!(content in input);
        let machine = content.parse()?;
        let (mut wanted, mut bind_states, mut transition) = (None, Vec::new(), None);
        let (mut handler, mut takes_input) = (None, true);
        while !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            if key == "machine" {
                wanted = Some(input.parse()?);
            } else if key == "bind_state" {
                let list;
                bracketed!(list in input);
                bind_states = Punctuated::<LitStr, Token![,]>::parse_terminated(&list)?.into_iter().collect();
            } else if key == "handler" {
                handler = Some(input.parse()?);
            } else if key == "input" {
                takes_input = input.parse::<syn::LitBool>()?.value;
            } else if key == "transition" {
                transition = Some(input.parse()?);
            } else {
                return Err(syn::Error::new(key.span(), "internal: unexpected binding key"));
            }
        }
        Ok(Self { machine, wanted, handler, takes_input, bind_states, transition })
    }
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let binding: BindingInput = match syn::parse2(input) {
        Ok(binding) => binding,
        Err(error) => return error.into_compile_error(),
    };
    let states: Vec<String> = binding.bind_states.iter().map(LitStr::value).collect();
    let states: Vec<&str> = states.iter().map(String::as_str).collect();
    let transition = binding.transition.as_ref().map(LitStr::value);
    let declared: Vec<String> = binding.machine.ids.iter().map(LitStr::value).collect();
    let wanted = binding.wanted.as_ref().map_or_else(|| declared[0].clone(), LitStr::value);
    if !declared.contains(&wanted) {
        let message = format!("machine `{wanted}` is not declared (a machine `{}` is)", declared.join("`, `"));
        let span = binding.wanted.as_ref().map_or_else(proc_macro2::Span::call_site, LitStr::span);
        return syn::Error::new(span, message).into_compile_error();
    }
    let spec = binding.machine.spec_for(&wanted);
    let mut errors = spec.check_binding(&states, transition.as_deref());
    errors.extend(spec.check_instance_input(binding.takes_input));
    errors
        .into_iter()
        .map(|error| {
            let span = match &error {
                BindingError::UnknownState { index, .. } => binding.bind_states[*index].span(),
                BindingError::UnknownEvent { .. } | BindingError::EventNotAccepted { .. } => {
                    binding.transition.as_ref().map_or_else(proc_macro2::Span::call_site, LitStr::span)
                }
                BindingError::KeyMissing { .. } => {
                    binding.handler.as_ref().map_or_else(proc_macro2::Span::call_site, syn::Ident::span)
                }
            };
            syn::Error::new(span, error.to_string()).into_compile_error()
        })
        .collect()
}

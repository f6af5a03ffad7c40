//! `#[action]`: attribute keys → the handler's shape → checks → expansion.

mod ast;
mod attr;
mod expand;
mod validate;

use proc_macro2::TokenStream;
use quote::ToTokens;

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let function: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new_spanned(&item, "#[action] goes on a free `async fn`").into_compile_error();
            return quote::quote! { #item #error };
        }
    };
    let mut errors = Vec::new();
    let attrs = attr::ActionAttrs::parse(args, &mut errors);
    let handler = ast::Handler::from_fn(&function);
    match validate::validate(&attrs, &handler, &mut errors) {
        Some(action) if errors.is_empty() => expand::expand(&function, &action),
        _ => {
            // The user's function is still emitted: one mistake, one error.
            let mut out = function.to_token_stream();
            out.extend(errors.into_iter().map(syn::Error::into_compile_error));
            out
        }
    }
}

//! The handler function as `#[action]` sees it: name, asyncness, doc comment, parameters.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Expr, FnArg, ItemFn, Lit};

/// The parts of the user's `async fn` the expansion needs.
pub(crate) struct Handler<'a> {
    pub(crate) function: &'a ItemFn,
    /// The doc comment, which becomes the tool's description.
    pub(crate) doc: Option<Description>,
}

/// A tool description taken from `///` lines or `#[doc = …]` attributes.
#[derive(Clone)]
pub(crate) enum Description {
    /// Plain `///` lines, joined, one leading space per line removed.
    Text(String),
    /// At least one `#[doc = some_macro!(…)]`: joined by `concat!` at compile time.
    Concat(Vec<Expr>),
}

impl ToTokens for Description {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Self::Text(text) => quote!(#text),
            Self::Concat(parts) => quote!(::core::concat!(#(#parts),*)),
        });
    }
}

impl<'a> Handler<'a> {
    pub(crate) fn from_fn(function: &'a ItemFn) -> Self {
        Self { function, doc: description(&function.attrs) }
    }

    pub(crate) fn ident(&self) -> &syn::Ident {
        &self.function.sig.ident
    }

    /// The function's name as a tool's name is made of it: `async fn r#return` is
    /// `return`, since `r#` only lets Rust take a keyword as a name (and `#` is not a
    /// character of MCP tool names).
    pub(crate) fn name(&self) -> String {
        syn::ext::IdentExt::unraw(self.ident()).to_string()
    }

    pub(crate) fn params(&self) -> &syn::punctuated::Punctuated<FnArg, syn::Token![,]> {
        &self.function.sig.inputs
    }
}

fn description(attrs: &[syn::Attribute]) -> Option<Description> {
    let parts: Vec<&Expr> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => Some(&nv.value),
            _ => None,
        })
        .collect();
    let lines: Option<Vec<String>> = parts
        .iter()
        .map(|expr| match expr {
            Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        })
        .collect();
    match lines {
        Some(lines) => {
            let lines: Vec<&str> = lines.iter().map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end()).collect();
            let text = lines.join("\n").trim().to_string();
            (!text.is_empty()).then_some(Description::Text(text))
        }
        None => {
            let mut joined = Vec::new();
            for (i, part) in parts.into_iter().enumerate() {
                if i > 0 {
                    joined.push(syn::parse_quote!("\n"));
                }
                joined.push(part.clone());
            }
            Some(Description::Concat(joined))
        }
    }
}

//! The handler function as `#[action]` sees it: name, asyncness, doc comment, parameters.

use syn::{FnArg, ItemFn};

/// The parts of the user's `async fn` the expansion needs.
pub(crate) struct Handler<'a> {
    pub(crate) function: &'a ItemFn,
    /// The doc comment, lines joined, one leading space per line removed.
    pub(crate) doc: Option<String>,
}

impl<'a> Handler<'a> {
    pub(crate) fn from_fn(function: &'a ItemFn) -> Self {
        Self { function, doc: doc_comment(&function.attrs) }
    }

    pub(crate) fn ident(&self) -> &syn::Ident {
        &self.function.sig.ident
    }

    pub(crate) fn params(&self) -> &syn::punctuated::Punctuated<FnArg, syn::Token![,]> {
        &self.function.sig.inputs
    }
}

fn doc_comment(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).trim_end().to_string())
        .collect();
    let doc = lines.join("\n").trim().to_string();
    (!doc.is_empty()).then_some(doc)
}

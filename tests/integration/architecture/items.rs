//! A file's items, split from its tokens. `syn` would parse every expression of every
//! function body (a second for the runtime, unoptimized); the layering rules need only
//! each item's kind, its name and its tokens, so the items are cut out of the token
//! stream, and only `use` declarations and attributes are handed to `syn`.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// One item of a module.
pub(super) struct Item {
    /// Its attributes' contents (`cfg(test)` for `#[cfg(test)]`).
    pub(super) attrs: Vec<syn::Meta>,
    pub(super) kind: Kind,
    /// All its tokens, attributes included.
    pub(super) tokens: TokenStream,
}

pub(super) enum Kind {
    /// `mod name;` (no body) or `mod name { … }`.
    Mod {
        name: String,
        body: Option<TokenStream>,
    },
    Use(syn::ItemUse),
    /// An item that defines `name` in its module (a function, a type, `macro_rules!`…).
    Named(String),
    /// A macro called at item level (`units! { … }`), which may define names.
    MacroCall,
    /// `impl` blocks, `extern` blocks.
    Other,
}

/// The items of a file or of a module's body.
pub(super) fn items(tokens: TokenStream) -> Vec<Item> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let punct = |i: usize, c: char| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let ident = |i: usize| match tokens.get(i) {
        Some(TokenTree::Ident(ident)) => Some(ident.to_string()),
        _ => None,
    };
    let brace = |i: usize| matches!(tokens.get(i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace);
    // The first `;` from `i`, or the end.
    let semi = |i: usize| (i..tokens.len()).find(|&j| punct(j, ';')).unwrap_or(tokens.len() - 1);
    // The first `{ … }` or `;` from `i` outside generics (`<const N: u32 = { 3 }>`): the
    // end of a function, type, trait or impl.
    let body_or_semi = |i: usize| {
        let mut angles = 0usize;
        for j in i..tokens.len() {
            if punct(j, '<') {
                angles += 1;
            } else if punct(j, '>') && !(j > 0 && punct(j - 1, '-')) {
                angles = angles.saturating_sub(1);
            } else if angles == 0 && (brace(j) || punct(j, ';')) {
                return j;
            }
        }
        tokens.len() - 1
    };

    let mut items = Vec::new();
    let mut i = 0;
    // The file's inner attributes (`//!` docs, `#![allow(…)]`) belong to no item.
    while punct(i, '#') && punct(i + 1, '!') {
        i += 3;
    }
    while i < tokens.len() {
        let start = i;
        let mut attrs = Vec::new();
        while punct(i, '#') {
            // Doc comments (`#[doc = "…"]`, most attributes) are not parsed.
            if let Some(TokenTree::Group(g)) = tokens.get(i + 1)
                && !starts_with_doc(g.stream())
                && let Ok(meta) = syn::parse2::<syn::Meta>(g.stream())
            {
                attrs.push(meta);
            }
            i += 2;
        }
        if i >= tokens.len() {
            break;
        }
        // Visibility and qualifiers.
        if ident(i).as_deref() == Some("pub") {
            i += 1;
            if matches!(tokens.get(i), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis) {
                i += 1;
            }
        }
        loop {
            match ident(i).as_deref() {
                Some("async" | "unsafe" | "default" | "auto" | "safe") => i += 1,
                Some("const") if matches!(ident(i + 1).as_deref(), Some("fn" | "unsafe" | "async" | "extern")) => {
                    i += 1
                }
                Some("extern") if !matches!(ident(i + 1).as_deref(), Some("crate")) => {
                    i += 1;
                    if matches!(tokens.get(i), Some(TokenTree::Literal(_))) {
                        i += 1;
                    }
                }
                _ => break,
            }
        }
        let (kind, end) = match ident(i).as_deref() {
            Some("mod") => {
                let name = ident(i + 1).expect("a module's name");
                match tokens.get(i + 2) {
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                        (Kind::Mod { name, body: Some(g.stream()) }, i + 2)
                    }
                    _ => (Kind::Mod { name, body: None }, i + 2),
                }
            }
            Some("use") => {
                let end = semi(i);
                let declaration = tokens[start..=end].iter().cloned().collect();
                match syn::parse2::<syn::ItemUse>(declaration) {
                    Ok(declaration) => (Kind::Use(declaration), end),
                    Err(e) => panic!("a `use` the resolver cannot read: {e}"),
                }
            }
            Some("macro_rules") => {
                let name = ident(i + 2).expect("a macro's name");
                let end = if brace(i + 3) { i + 3 } else { semi(i + 3) };
                (Kind::Named(name), end)
            }
            Some("const" | "static" | "type") => {
                let at = if ident(i + 1).as_deref() == Some("mut") { i + 2 } else { i + 1 };
                let name = ident(at).unwrap_or_else(|| "_".into());
                (Kind::Named(name), semi(at))
            }
            Some(keyword @ ("fn" | "struct" | "enum" | "union" | "trait")) => {
                let name = ident(i + 1).unwrap_or_else(|| panic!("a {keyword}'s name"));
                (Kind::Named(name), body_or_semi(i + 1))
            }
            Some("extern") => (Kind::Other, semi(i)),
            Some("impl") => (Kind::Other, body_or_semi(i + 1)),
            // A foreign block (`extern "C" { … }`), the qualifiers just skipped.
            _ if brace(i) => (Kind::Other, i),
            // A macro call at item level: `path!( … );` or `path! { … }`.
            _ => {
                let bang = (i..tokens.len()).find(|&j| punct(j, '!')).unwrap_or_else(|| {
                    let at: TokenStream = tokens[i..tokens.len().min(i + 8)].iter().cloned().collect();
                    panic!("an item the resolver does not know: `{at}`")
                });
                let end = if brace(bang + 1) || !punct(bang + 2, ';') { bang + 1 } else { bang + 2 };
                (Kind::MacroCall, end)
            }
        };
        items.push(Item { attrs, kind, tokens: tokens[start..=end].iter().cloned().collect() });
        i = end + 1;
    }
    items
}

/// Whether an attribute's content is a doc comment's.
pub(super) fn starts_with_doc(content: TokenStream) -> bool {
    matches!(content.into_iter().next(), Some(TokenTree::Ident(ident)) if ident == "doc")
}

//! The keys of `#[action(...)]`, each parsed once; unknown and repeated keys are errors.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::{LitStr, Token, bracketed, punctuated::Punctuated};

/// The keys `#[action]` understands, in the order messages list them.
const KEYS: &[&str] = &[
    "domain",
    "global",
    "bind_state",
    "transition",
    "creates",
    "compact",
    "not_for",
    "machine",
    "name",
    "timeout",
    "rate_limit",
    "expensive",
    "allow_unknown_fields",
    "transactional",
    "confirm",
    "confirm_above",
    "idempotency_key",
    "scope",
    "startup_checked",
    "task",
];

/// One key's value; setting it twice is an error at the second key.
pub(crate) struct Attr<T> {
    value: Option<T>,
}

impl<T> Default for Attr<T> {
    fn default() -> Self {
        Self { value: None }
    }
}

impl<T> Attr<T> {
    fn set(&mut self, meta: &ParseNestedMeta, value: T) -> syn::Result<()> {
        if self.value.is_some() {
            return Err(syn::Error::new_spanned(&meta.path, format!("duplicate `action` key `{}`", key_name(meta))));
        }
        self.value = Some(value);
        Ok(())
    }

    pub(crate) fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }
}

/// Everything written inside `#[action(...)]`.
#[derive(Default)]
pub(crate) struct ActionAttrs {
    pub(crate) domain: Attr<LitStr>,
    pub(crate) bind_state: Attr<Vec<LitStr>>,
    pub(crate) bind_state_span: Option<Span>,
    pub(crate) transition: Attr<LitStr>,
    /// `creates`: the action creates an instance of its keyed machine, whose key the store mints.
    pub(crate) creates: Attr<Span>,
    pub(crate) compact: Attr<LitStr>,
    pub(crate) machine: Attr<LitStr>,
    pub(crate) name: Attr<LitStr>,
    pub(crate) startup_checked: Attr<Span>,
    pub(crate) global: Attr<Span>,
    pub(crate) not_for: Attr<LitStr>,
    pub(crate) timeout: Attr<LitStr>,
    pub(crate) allow_unknown_fields: Attr<Span>,
    pub(crate) rate_limit: Attr<LitStr>,
    pub(crate) expensive: Attr<Span>,
    pub(crate) transactional: Attr<Span>,
    pub(crate) confirm: Attr<LitStr>,
    pub(crate) confirm_above: Attr<LitStr>,
    pub(crate) idempotency_key: Attr<LitStr>,
    /// `task = "optional" | "required"`: the call may (must) run as an MCP task.
    pub(crate) task: Attr<LitStr>,
    pub(crate) scope: Attr<Vec<LitStr>>,
    /// Keys that were written but failed to parse (already reported).
    pub(crate) failed: Vec<String>,
}

impl ActionAttrs {
    /// Parses the attribute's arguments; problems go to `errors`, parsing goes on.
    pub(crate) fn parse(args: TokenStream, errors: &mut Vec<syn::Error>) -> Self {
        let mut attrs = Self::default();
        let parser = syn::meta::parser(|meta| {
            if let Err(error) = attrs.parse_key(&meta) {
                errors.push(error);
                attrs.failed.push(key_name(&meta));
                // Skip what is left of this key so the next keys are still read and one
                // mistake gives one error.
                while !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                    meta.input.parse::<proc_macro2::TokenTree>()?;
                }
            }
            Ok(())
        });
        if let Err(error) = syn::parse::Parser::parse2(parser, args) {
            errors.push(error);
        }
        attrs
    }

    fn parse_key(&mut self, meta: &ParseNestedMeta) -> syn::Result<()> {
        let key = key_name(meta);
        match key.as_str() {
            "domain" => self.domain.set(meta, meta.value()?.parse()?),
            "transition" => self.transition.set(meta, meta.value()?.parse()?),
            "creates" => self.creates.set(meta, flag(meta)?),
            "compact" => self.compact.set(meta, meta.value()?.parse()?),
            "machine" => self.machine.set(meta, meta.value()?.parse()?),
            "name" => self.name.set(meta, meta.value()?.parse()?),
            "startup_checked" => self.startup_checked.set(meta, flag(meta)?),
            "global" => self.global.set(meta, flag(meta)?),
            "not_for" => self.not_for.set(meta, meta.value()?.parse()?),
            "timeout" => self.timeout.set(meta, meta.value()?.parse()?),
            "allow_unknown_fields" => self.allow_unknown_fields.set(meta, flag(meta)?),
            "rate_limit" => self.rate_limit.set(meta, meta.value()?.parse()?),
            "transactional" => self.transactional.set(meta, flag(meta)?),
            "expensive" => self.expensive.set(meta, flag(meta)?),
            "confirm" => self.confirm.set(meta, meta.value()?.parse()?),
            "confirm_above" => self.confirm_above.set(meta, meta.value()?.parse()?),
            "idempotency_key" => self.idempotency_key.set(meta, meta.value()?.parse()?),
            "task" => self.task.set(meta, meta.value()?.parse()?),
            "scope" => self.scope.set(meta, one_or_list(meta)?),
            "bind_state" => {
                let states = one_or_list(meta)?;
                self.bind_state_span = meta.path.get_ident().map(|i| i.span());
                self.bind_state.set(meta, states)
            }
            _ => {
                let expected: Vec<String> = KEYS.iter().map(|k| format!("`{k}`")).collect();
                Err(syn::Error::new_spanned(
                    &meta.path,
                    format!("unknown `action` key `{key}`; expected one of {}", expected.join(", ")),
                ))
            }
        }
    }
}

/// The key as written (`domain`, or a path such as `toolgate::name`).
fn key_name(meta: &ParseNestedMeta) -> String {
    quote::ToTokens::to_token_stream(&meta.path).to_string().replace(' ', "")
}

/// `key = "a"` or `key = ["a", "b"]`.
fn one_or_list(meta: &ParseNestedMeta) -> syn::Result<Vec<LitStr>> {
    let value = meta.value()?;
    if value.peek(syn::token::Bracket) {
        let list;
        bracketed!(list in value);
        Ok(Punctuated::<LitStr, Token![,]>::parse_terminated(&list)?.into_iter().collect())
    } else {
        Ok(vec![value.parse()?])
    }
}

/// A key that takes no value (`global`, `startup_checked`); returns its span.
fn flag(meta: &ParseNestedMeta) -> syn::Result<Span> {
    if meta.input.peek(Token![=]) {
        let key = key_name(meta);
        return Err(syn::Error::new_spanned(&meta.path, format!("`{key}` is a flag: write `{key}` without a value")));
    }
    Ok(meta.path.get_ident().map_or_else(Span::call_site, |i| i.span()))
}

//! The typed model of a `machine!` declaration, keeping every token's span.
//!
//! ```text
//! id: "invoice",        // or a list, `id: ["bus", "flight"]`: one machine per id
//! key: "id",            // optional: one instance per value of the `id` argument
//! mint: "INV-{n}",      // optional: keys of new instances minted by the store
//! context: Invoice,     // optional: each instance's data, a type with serde and schemars
//! initial: "draft",
//! states: {
//!     draft: { on: { SUBMIT: "review" } },
//!     review: { on: {
//!         APPROVE: { target: "approved", guard: "fully_funded" },              // guarded
//!         ROUTE: [{ target: "approved", guard: "small" }, { target: "manual" }], // first passing
//!     } },
//!     quoted: { after: { "PT15M": "expired" } },   // time moves it, ISO-8601
//!     lent: { after: { "P14D": "overdue" },
//!             on: { RENEW: { target: "lent", reenter: true } } },  // enters `lent` again: its clock restarts
//!     expired: { entry: "release_hold" },           // effects run on entering it (and `exit`): names or paths
//!     discharged: { type: "final" },
//! }
//! ```
//! State and event names may be identifiers or string literals.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token, braced};
use toolgate_machine::grammar::parse_iso_duration_ms;
use toolgate_machine::{Delayed, MachineSpec, StateSpec, Transition};

/// A name written as an identifier (keywords included: names are data) or a string
/// literal.
#[derive(Clone)]
pub(crate) struct Name {
    pub(crate) value: String,
    pub(crate) span: Span,
}

impl Parse for Name {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            Ok(Self { value: lit.value(), span: lit.span() })
        } else {
            let ident = input.call(Ident::parse_any)?;
            Ok(Self { value: ident.to_string(), span: ident.span() })
        }
    }
}

pub(crate) struct MachineAst {
    /// `id: "bus"`, or `id: ["bus", "flight"]`: one declaration, several machines alike.
    pub(crate) ids: Vec<LitStr>,
    pub(crate) initial: Option<LitStr>,
    pub(crate) key: Option<LitStr>,
    /// The span of `scope: tenant`, when present.
    pub(crate) tenant_scoped: Option<Span>,
    /// The span of `owner: principal`, when present.
    pub(crate) principal_owned: Option<Span>,
    /// `mint: "PAY-{n}"`: keys of new instances are minted by the store.
    pub(crate) mint: Option<LitStr>,
    /// `context: Payment`: the type of each instance's data.
    pub(crate) context: Option<syn::Type>,
    pub(crate) states_key: Span,
    pub(crate) states: Vec<StateAst>,
}

pub(crate) struct StateAst {
    pub(crate) name: Name,
    /// The span of `type: "final"` when present.
    pub(crate) final_span: Option<Span>,
    /// Each event with its branches (one, unless written as an array).
    pub(crate) on: Vec<(Name, Vec<BranchAst>)>,
    /// `after: { "PT15M": "expired" }`: the duration as written, in milliseconds, and the
    /// target.
    pub(crate) after: Vec<(LitStr, u64, LitStr)>,
    /// `entry: "release_hold"` or `entry: ["a", "b"]`: the effects run on entering it.
    pub(crate) entry: Vec<LitStr>,
    /// `exit: …`: the effects run on leaving it.
    pub(crate) exit: Vec<LitStr>,
}

/// One branch of an event: `"approved"` or `{ target: "approved", guard: "fully_funded",
/// reenter: true }`.
pub(crate) struct BranchAst {
    pub(crate) target: LitStr,
    pub(crate) guard: Option<LitStr>,
    /// `reenter: true`: a transition to its own state enters it again (XState v5).
    pub(crate) reenter: bool,
}

impl Parse for BranchAst {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            return Ok(Self { target: input.parse()?, guard: None, reenter: false });
        }
        if !input.peek(syn::token::Brace) {
            return Err(input.error(
                "expected a target state as a string (`\"review\"`), `{ target: \"…\", guard: \"…\" }` or a list of those",
            ));
        }
        let body;
        braced!(body in input);
        let (mut target, mut guard, mut reenter) = (None, None, false);
        parse_keys(&body, "transition", &["target", "guard", "reenter"], |key, input| {
            if key == "reenter" {
                reenter = input.parse::<syn::LitBool>()?.value;
            } else if key == "target" {
                target = Some(input.parse()?);
            } else {
                guard = Some(input.parse()?);
            }
            Ok(())
        })?;
        let target = target.ok_or_else(|| syn::Error::new(body.span(), "a transition needs `target: \"<state>\"`"))?;
        Ok(Self { target, guard, reenter })
    }
}

/// An effect's name: `"release_hold"`, or the function itself, `release_hold`.
struct EffectName(LitStr);

impl Parse for EffectName {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitStr) {
            return Ok(Self(input.parse()?));
        }
        let path: syn::Path = input.parse()?;
        let text = quote::ToTokens::to_token_stream(&path).to_string().replace(' ', "");
        Ok(Self(LitStr::new(&text, syn::spanned::Spanned::span(&path))))
    }
}

/// Parses `key: value` pairs separated by commas, rejecting unknown and repeated keys.
fn parse_keys(
    input: ParseStream,
    what: &str,
    known: &[&str],
    mut value: impl FnMut(&Ident, ParseStream) -> syn::Result<()>,
) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    while !input.is_empty() {
        let key = input.call(Ident::parse_any)?;
        let name = key.to_string();
        if !known.contains(&name.as_str()) {
            let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
            return Err(syn::Error::new(
                key.span(),
                format!("unknown {what} key `{name}`; expected one of {}", expected.join(", ")),
            ));
        }
        if seen.contains(&name) {
            return Err(syn::Error::new(key.span(), format!("duplicate {what} key `{name}`")));
        }
        seen.push(name);
        input.parse::<Token![:]>()?;
        value(&key, input)?;
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

impl Parse for MachineAst {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (mut id, mut initial, mut key_field, mut states, mut states_key) = (None, None, None, Vec::new(), None);
        let (mut tenant_scoped, mut principal_owned, mut mint, mut context) = (None, None, None, None);
        let known = ["id", "key", "scope", "owner", "mint", "context", "initial", "states"];
        parse_keys(input, "machine", &known, |key, input| {
            match key.to_string().as_str() {
                "id" if input.peek(syn::token::Bracket) => {
                    let list;
                    syn::bracketed!(list in input);
                    let ids = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(&list)?;
                    if ids.is_empty() {
                        return Err(syn::Error::new(key.span(), "`id: [...]` lists no id"));
                    }
                    id = Some(ids.into_iter().collect::<Vec<_>>());
                }
                "id" => id = Some(vec![input.parse()?]),
                "key" => key_field = Some(input.parse()?),
                "mint" => mint = Some(input.parse()?),
                "context" => context = Some(input.parse()?),
                "scope" => {
                    let scope: syn::Ident = input.parse()?;
                    if scope != "tenant" {
                        return Err(syn::Error::new(
                            scope.span(),
                            "`scope` is `tenant`: instances named by the caller's tenant and the key",
                        ));
                    }
                    tenant_scoped = Some(scope.span());
                }
                "owner" => {
                    let owner: syn::Ident = input.parse()?;
                    if owner != "principal" {
                        return Err(syn::Error::new(
                            owner.span(),
                            "`owner` is `principal`: an instance belongs to the principal whose call created it",
                        ));
                    }
                    principal_owned = Some(owner.span());
                }
                "initial" => initial = Some(input.parse()?),
                _ => {
                    states_key = Some(key.span());
                    let content;
                    braced!(content in input);
                    while !content.is_empty() {
                        states.push(content.parse()?);
                        if content.is_empty() {
                            break;
                        }
                        content.parse::<Token![,]>()?;
                    }
                }
            }
            Ok(())
        })?;
        let missing = |what: &str| syn::Error::new(Span::call_site(), format!("machine needs {what}"));
        let ids = id.ok_or_else(|| missing("an `id: \"…\"`"))?;
        let states_key = states_key.ok_or_else(|| missing("`states: { … }`"))?;
        Ok(Self { ids, initial, key: key_field, tenant_scoped, principal_owned, mint, context, states_key, states })
    }
}

impl Parse for StateAst {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Name = input.parse()?;
        input.parse::<Token![:]>()?;
        let body;
        braced!(body in input);
        let (mut final_span, mut on, mut after) = (None, Vec::new(), Vec::new());
        let (mut entry, mut exit) = (Vec::new(), Vec::new());
        parse_keys(&body, "state", &["on", "after", "type", "entry", "exit"], |key, input| {
            if key == "entry" || key == "exit" {
                let named = if input.peek(syn::token::Bracket) {
                    let list;
                    syn::bracketed!(list in input);
                    let names = syn::punctuated::Punctuated::<EffectName, Token![,]>::parse_terminated(&list)?;
                    names.into_iter().map(|name| name.0).collect()
                } else {
                    vec![input.parse::<EffectName>()?.0]
                };
                if key == "entry" { entry = named } else { exit = named }
            } else if key == "type" {
                let kind: LitStr = input.parse()?;
                match kind.value().as_str() {
                    "final" => final_span = Some(key.span()),
                    "atomic" => {}
                    other => {
                        return Err(syn::Error::new(
                            kind.span(),
                            format!("state type `{other}` is not supported; expected `\"final\"` or `\"atomic\"`"),
                        ));
                    }
                }
            } else if key == "after" {
                let delays;
                braced!(delays in input);
                while !delays.is_empty() {
                    let delay: LitStr = delays.parse()?;
                    let after_ms =
                        parse_iso_duration_ms(&delay.value()).map_err(|e| syn::Error::new(delay.span(), e))?;
                    delays.parse::<Token![:]>()?;
                    after.push((delay, after_ms, delays.parse()?));
                    if delays.is_empty() {
                        break;
                    }
                    delays.parse::<Token![,]>()?;
                }
            } else {
                let events;
                braced!(events in input);
                while !events.is_empty() {
                    let event: Name = events.parse()?;
                    events.parse::<Token![:]>()?;
                    let branches = if events.peek(syn::token::Bracket) {
                        let list;
                        syn::bracketed!(list in events);
                        let branches = syn::punctuated::Punctuated::<BranchAst, Token![,]>::parse_terminated(&list)?;
                        if branches.is_empty() {
                            return Err(syn::Error::new(event.span, "an event's `[…]` lists no transition"));
                        }
                        branches.into_iter().collect()
                    } else {
                        vec![events.parse()?]
                    };
                    on.push((event, branches));
                    if events.is_empty() {
                        break;
                    }
                    events.parse::<Token![,]>()?;
                }
            }
            Ok(())
        })?;
        Ok(Self { name, final_span, on, after, entry, exit })
    }
}

impl MachineAst {
    /// The first id (messages about the shared declaration name it).
    pub(crate) fn id(&self) -> &LitStr {
        &self.ids[0]
    }

    /// The machine as declared under its first id.
    pub(crate) fn spec(&self) -> MachineSpec {
        self.spec_for(&self.id().value())
    }

    /// The machine as declared under `id`.
    pub(crate) fn spec_for(&self, id: &str) -> MachineSpec {
        MachineSpec {
            id: id.to_string(),
            initial: self.initial.as_ref().map(LitStr::value),
            key: self.key.as_ref().map(LitStr::value),
            tenant_scoped: self.tenant_scoped.is_some(),
            principal_owned: self.principal_owned.is_some(),
            mint: self.mint.as_ref().map(LitStr::value),
            states: self
                .states
                .iter()
                .map(|s| StateSpec {
                    name: s.name.value.clone(),
                    is_final: s.final_span.is_some(),
                    on: (s.on.iter().enumerate())
                        // An event listed twice is reported by validation; its first entry counts.
                        .filter(|(i, (event, _))| !s.on[..*i].iter().any(|(e, _)| e.value == event.value))
                        .flat_map(|(_, (event, branches))| {
                            branches.iter().map(|b| Transition {
                                event: event.value.clone(),
                                target: b.target.value(),
                                guard: b.guard.as_ref().map(LitStr::value),
                                reenter: b.reenter,
                            })
                        })
                        .collect(),
                    after: (s.after.iter())
                        .map(|(_, after_ms, target)| Delayed { after_ms: *after_ms, target: target.value() })
                        .collect(),
                    entry: s.entry.iter().map(LitStr::value).collect(),
                    exit: s.exit.iter().map(LitStr::value).collect(),
                })
                .collect(),
        }
    }
}

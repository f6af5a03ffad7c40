//! The rules an `#[action]` must follow, one function each; all problems are collected.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, LitStr};
use toolgate_machine::grammar::{Rate, parse_duration_ms};

use super::ast::{Description, Handler};
use super::attr::ActionAttrs;

/// A checked action, ready to expand.
pub(crate) struct Action<'a> {
    pub(crate) handler: &'a Handler<'a>,
    pub(crate) name: String,
    /// `None` for a global tool.
    pub(crate) domain: Option<String>,
    /// The machine the binding is checked against at compile time: explicit, else the
    /// domain's. (Only the explicit one is registered: the runtime applies the default.)
    pub(crate) machine: Option<LitStr>,
    /// `machine = "…"` as written.
    pub(crate) explicit_machine: Option<String>,
    pub(crate) bind_states: Vec<LitStr>,
    pub(crate) transition: Option<LitStr>,
    /// `creates`: the action creates an instance of its machine.
    pub(crate) creates: bool,
    pub(crate) compact: Option<String>,
    pub(crate) not_for: Option<String>,
    pub(crate) description: Description,
    pub(crate) takes_input: bool,
    pub(crate) params: Params<'a>,
    /// The binding is checked when the server starts (machine loaded from JSON).
    pub(crate) startup_checked: bool,
    /// The handler's deadline, in milliseconds, when the action sets one.
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) allow_unknown_fields: bool,
    /// `rate_limit = "30/minute per client"`.
    pub(crate) rate_limit: Option<Rate>,
    /// `transactional`.
    pub(crate) transactional: bool,
    /// `expensive`: each call costs (money, a slow backend); the audit asks for a rate limit.
    pub(crate) expensive: bool,
    /// `scope = …`: every scope the tool requires.
    pub(crate) scopes: Vec<String>,
    /// `confirm = "otp"`, with `confirm_above`'s `(field, amount, currency)` if given.
    pub(crate) confirm: Option<Option<(String, String, String)>>,
    /// `idempotency_key = "request_id"`.
    pub(crate) idempotency_key: Option<String>,
    /// `task = "optional"` (`Some(false)`) or `"required"` (`Some(true)`).
    pub(crate) task: Option<bool>,
}

pub(crate) fn validate<'a>(
    attrs: &ActionAttrs,
    handler: &'a Handler<'a>,
    errors: &mut Vec<syn::Error>,
) -> Option<Action<'a>> {
    check_async(handler, errors);
    check_not_generic(handler, errors);
    let params = check_params(handler, errors);
    let description = check_doc(handler, errors);
    let domain = check_domain(attrs, handler, errors);
    check_transition_has_states(attrs, errors);
    check_creates_is_unbound(attrs, errors);
    check_bind_state_not_empty(attrs, errors);
    let name = domain.as_ref().and_then(|d| check_name(attrs, handler, d.as_ref().map(LitStr::value), errors));
    let machine = attrs.machine.get().cloned().or_else(|| domain.clone().flatten());
    check_global_binding_has_machine(attrs, &machine, errors);
    let timeout_ms = attrs.timeout.get().and_then(|t| check_timeout(t, errors));
    if attrs.timeout.get().is_some() && timeout_ms.is_none() {
        return None;
    }
    let rate_limit = attrs.rate_limit.get().and_then(|r| check_rate_limit(r, errors));
    if attrs.rate_limit.get().is_some() && rate_limit.is_none() {
        return None;
    }
    let scopes = check_scopes(attrs, errors);
    let confirm = check_confirm(attrs, errors);
    let idempotency_key = check_idempotency_key(attrs, errors);
    let task = check_task(attrs, errors);
    let (domain, name, description, params) = (domain?, name?, description?, params?);
    Some(Action {
        handler,
        name,
        domain: domain.as_ref().map(LitStr::value),
        machine,
        explicit_machine: attrs.machine.get().map(LitStr::value),
        bind_states: attrs.bind_state.get().cloned().unwrap_or_default(),
        transition: attrs.transition.get().cloned(),
        creates: attrs.creates.get().is_some(),
        compact: attrs.compact.get().map(LitStr::value),
        not_for: attrs.not_for.get().map(LitStr::value),
        description,
        takes_input: params.input.is_some(),
        params,
        startup_checked: attrs.startup_checked.get().is_some(),
        timeout_ms,
        allow_unknown_fields: attrs.allow_unknown_fields.get().is_some(),
        rate_limit,
        transactional: attrs.transactional.get().is_some(),
        expensive: attrs.expensive.get().is_some(),
        scopes,
        confirm,
        idempotency_key,
        task,
    })
}

/// `task = "optional" | "required"`.
fn check_task(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) -> Option<bool> {
    let task = attrs.task.get()?;
    match task.value().as_str() {
        "optional" => Some(false),
        "required" => Some(true),
        other => {
            errors.push(syn::Error::new(
                task.span(),
                format!(
                    "`task = \"{other}\"`: a tool may run as an MCP task (`\"optional\"`) or must (`\"required\"`)"
                ),
            ));
            None
        }
    }
}

/// `idempotency_key = "request_id"`: an input field's name, on a `transactional` action
/// (its records are kept per principal). Whether the input has the field is checked when
/// the server starts.
fn check_idempotency_key(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) -> Option<String> {
    let key = attrs.idempotency_key.get()?;
    let value = key.value();
    let is_name = value.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name {
        errors.push(syn::Error::new(key.span(), "`idempotency_key` names a field of the input (`request_id`)"));
        return None;
    }
    if attrs.transactional.get().is_none() {
        errors.push(syn::Error::new(
            key.span(),
            "an idempotent action is `transactional`: its retries are recognized per principal, so mark it `transactional` too",
        ));
    }
    Some(value)
}

/// `confirm = "otp"` on a `transactional` action, and `confirm_above = "FIELD > AMOUNT
/// CURRENCY"` only with it. (Whether the amount is money in that currency is checked when
/// the server starts.)
fn check_confirm(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) -> Option<Option<(String, String, String)>> {
    let above = attrs.confirm_above.get().and_then(|above| {
        let value = above.value();
        let parts: Vec<&str> = value.split_whitespace().collect();
        match parts[..] {
            [field, ">", amount, currency]
                if !field.is_empty()
                    && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && amount.chars().all(|c| c.is_ascii_digit() || c == '.')
                    && currency.len() == 3
                    && currency.chars().all(|c| c.is_ascii_uppercase()) =>
            {
                Some((field.to_string(), amount.to_string(), currency.to_string()))
            }
            _ => {
                errors.push(syn::Error::new(
                    above.span(),
                    "`confirm_above` is `FIELD > AMOUNT CURRENCY`, the field a `Money` argument: `amount > 500.00 EUR`",
                ));
                None
            }
        }
    });
    let Some(confirm) = attrs.confirm.get() else {
        if let Some(above) = attrs.confirm_above.get() {
            errors.push(syn::Error::new(above.span(), "`confirm_above` needs `confirm = \"otp\"`"));
        }
        return None;
    };
    if confirm.value() != "otp" {
        errors.push(syn::Error::new(confirm.span(), "`confirm` is `\"otp\"`: a one-time code bound to the call"));
        return None;
    }
    if attrs.transactional.get().is_none() {
        errors.push(syn::Error::new(
            confirm.span(),
            "a confirmed action moves money or data: mark it `transactional` too, so no call without an authenticated principal gets as far as a challenge",
        ));
    }
    Some(above)
}

/// `scope = "payments:capture"` or a list: each an OAuth scope token (RFC 6749 §3.3:
/// printable ASCII without spaces, quotes or backslashes), none twice, at least one.
fn check_scopes(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) -> Vec<String> {
    let Some(scopes) = attrs.scope.get() else { return Vec::new() };
    if scopes.is_empty() {
        errors.push(syn::Error::new(
            Span::call_site(),
            "`scope = []` requires nothing: name at least one scope, or remove the key",
        ));
    }
    let mut seen = Vec::new();
    for scope in scopes {
        let value = scope.value();
        let valid = !value.is_empty() && value.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
        if !valid {
            errors.push(syn::Error::new(
                scope.span(),
                format!("`{value}` is not a scope: a scope is printable ASCII without spaces, quotes or backslashes (`payments:capture`)"),
            ));
        } else if seen.contains(&value) {
            errors.push(syn::Error::new(scope.span(), format!("scope `{value}` is listed twice")));
        } else {
            seen.push(value);
        }
    }
    seen
}

/// `rate_limit = "30/minute per client"`: the grammar the runtime shares.
fn check_rate_limit(limit: &LitStr, errors: &mut Vec<syn::Error>) -> Option<Rate> {
    Rate::parse(&limit.value())
        .map_err(|problem| errors.push(syn::Error::new(limit.span(), format!("`rate_limit` {problem}"))))
        .ok()
}

/// `timeout = "30s"`: the grammar the runtime shares.
fn check_timeout(timeout: &LitStr, errors: &mut Vec<syn::Error>) -> Option<u64> {
    parse_duration_ms(&timeout.value())
        .map_err(|problem| errors.push(syn::Error::new(timeout.span(), format!("`timeout` {problem}"))))
        .ok()
}

/// Handlers are awaited by the runtime; a plain `fn` would block the executor.
fn check_async(handler: &Handler, errors: &mut Vec<syn::Error>) {
    let sig = &handler.function.sig;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span,
            format!("#[action] handlers must be `async fn`; write `async fn {}`", sig.ident),
        ));
    }
}

/// The registration names one concrete function; a generic one has no single address.
fn check_not_generic(handler: &Handler, errors: &mut Vec<syn::Error>) {
    let generics = &handler.function.sig.generics;
    if !generics.params.is_empty() {
        errors.push(syn::Error::new(generics.span(), "#[action] handlers cannot be generic"));
    }
}

/// What a handler's parameters are: an optional input first, then the parameters the
/// call fills in (`Ctx`, `State<T>`: anything implementing `FromCtx`), in any order.
pub(crate) struct Params<'a> {
    pub(crate) input: Option<&'a syn::Type>,
    /// The `O` of the handler's `Result<O, ToolError>`, and the return type itself.
    pub(crate) output: &'a syn::Type,
    pub(crate) return_type: &'a syn::Type,
    /// The parameters after the input, in order.
    pub(crate) extracted: Vec<&'a syn::Type>,
}

/// The name of a parameter type's last path segment (`Ctx` in `toolgate::Ctx`).
fn last_segment(ty: &syn::Type) -> Option<&syn::Ident> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// Whether a parameter's type is written `Ctx`, `State<…>`, `Principal`,
/// `Option<Principal>` or `Transaction` (with any path before it): the one place the macro reads a type's
/// name, to tell the input from the rest.
fn is_filled_in(ty: &syn::Type) -> bool {
    last_segment(ty)
        .is_some_and(|ident| ident == "Ctx" || ident == "State" || ident == "Principal" || ident == "Transaction")
        || option_of(ty).is_some_and(|inner| last_segment(inner).is_some_and(|ident| ident == "Principal"))
}

/// `T` of a type written `Option<T>`.
fn option_of(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last().filter(|s| s.ident == "Option")?;
    let syn::PathArguments::AngleBracketed(arguments) = &segment.arguments else { return None };
    match arguments.args.first() {
        Some(syn::GenericArgument::Type(inner)) if arguments.args.len() == 1 => Some(inner),
        _ => None,
    }
}

/// Handlers return `Result<O, ToolError>`; returns `O` and the whole return type.
fn check_return_type<'a>(handler: &'a Handler, errors: &mut Vec<syn::Error>) -> Option<(&'a syn::Type, &'a syn::Type)> {
    let wrong = |span: proc_macro2::Span, got: String| {
        syn::Error::new(
            span,
            format!(
                "#[action] handlers return `Result<T, ToolError>` (T: the output, any type with `Serialize` and `JsonSchema`, such as a struct, a `String` or a number, or `toolgate::content::Content`){got}"
            ),
        )
    };
    let syn::ReturnType::Type(_, ty) = &handler.function.sig.output else {
        errors.push(wrong(handler.ident().span(), ", and this one returns nothing".into()));
        return None;
    };
    let output = match &**ty {
        syn::Type::Path(path) => {
            path.path.segments.last().filter(|s| s.ident == "Result").and_then(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(args) if args.args.len() == 2 => match args.args.first() {
                    Some(syn::GenericArgument::Type(output)) => Some(output),
                    _ => None,
                },
                _ => None,
            })
        }
        _ => None,
    };
    match output {
        Some(output) => Some((output, ty)),
        None => {
            errors.push(wrong(ty.span(), String::new()));
            None
        }
    }
}

/// `(input: I, …)` with the input optional: the first parameter is the input unless its
/// type is written `Ctx` or `State<…>`; every later parameter is filled in by the call
/// (rustc checks it implements `FromCtx`, at its type), and `Ctx` comes at most once.
fn check_params<'a>(handler: &'a Handler, errors: &mut Vec<syn::Error>) -> Option<Params<'a>> {
    let params = handler.params();
    if let Some(FnArg::Receiver(receiver)) = params.first() {
        errors.push(syn::Error::new(receiver.span(), "#[action] goes on a free function, not a method"));
        return None;
    }
    let types: Vec<&syn::Type> = params
        .iter()
        .filter_map(|p| match p {
            FnArg::Typed(typed) => Some(&*typed.ty),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let (input, extracted) = match types.split_first() {
        Some((first, rest)) if !is_filled_in(first) => (Some(*first), rest.to_vec()),
        _ => (None, types),
    };
    let mut ctx_seen = false;
    for ty in &extracted {
        if last_segment(ty).is_some_and(|ident| ident == "Ctx") {
            if ctx_seen {
                errors.push(syn::Error::new(
                    ty.span(),
                    "#[action] handlers take `Ctx` at most once; remove this parameter and use the other one",
                ));
                return None;
            }
            ctx_seen = true;
        }
    }
    let (output, return_type) = check_return_type(handler, errors)?;
    Some(Params { input, output, return_type, extracted })
}

/// The doc comment is the tool's description: a model cannot use an undescribed tool well.
fn check_doc(handler: &Handler, errors: &mut Vec<syn::Error>) -> Option<Description> {
    if handler.doc.is_none() {
        errors.push(syn::Error::new(
            handler.ident().span(),
            format!(
                "#[action] `{}` needs a doc comment: it becomes the tool's description (`/// What it does. What it does not do.`)",
                handler.ident()
            ),
        ));
    }
    handler.doc.clone()
}

/// Every action belongs to a snake_case domain that prefixes its name, except `global`
/// tools (help, …), which belong to none. Returns `Some(None)` for a global tool.
fn check_domain(attrs: &ActionAttrs, handler: &Handler, errors: &mut Vec<syn::Error>) -> Option<Option<LitStr>> {
    match (attrs.domain.get(), attrs.global.get()) {
        (Some(domain), Some(global)) => {
            let mut error =
                syn::Error::new(*global, "a `global` tool belongs to no domain; remove `global` or `domain`");
            error.combine(syn::Error::new(domain.span(), "the domain is given here"));
            errors.push(error);
            None
        }
        (None, Some(_)) => Some(None),
        (None, None) => {
            // A malformed `domain` or `global` was already reported at its value.
            if !attrs.failed.iter().any(|k| k == "domain" || k == "global") {
                errors.push(syn::Error::new(
                    handler.ident().span(),
                    "#[action] needs `domain = \"…\"`: the intent domain this tool belongs to (it prefixes the tool name); only `global` tools have none",
                ));
            }
            None
        }
        (Some(domain), None) => {
            let value = domain.value();
            let snake = value.starts_with(|c: char| c.is_ascii_lowercase())
                && value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !snake {
                errors
                    .push(syn::Error::new(domain.span(), format!("domain `{value}` must be a snake_case identifier")));
                return None;
            }
            Some(Some(domain.clone()))
        }
    }
}

/// Names a model confuses across domains when they stand alone.
const GENERIC_NAMES: &[&str] = &[
    "search",
    "query",
    "get",
    "list",
    "find",
    "run",
    "fetch",
    "lookup",
    "execute",
    "call",
    "invoke",
    "create",
    "update",
    "delete",
    "book",
    "cancel",
    "pay",
    "buscar",
    "consultar",
    "obtener",
    "listar",
    "ejecutar",
    "reservar",
];

/// Tool names are `{domain}_{action}`, so a model never confuses two domains' tools; a
/// global tool's name must still say what it does, not a bare generic verb.
fn check_name(
    attrs: &ActionAttrs,
    handler: &Handler,
    domain: Option<String>,
    errors: &mut Vec<syn::Error>,
) -> Option<String> {
    let (value, span) = match attrs.name.get() {
        Some(name) => (name.value(), name.span()),
        None => match &domain {
            // A function already named for its domain keeps its name: `fn flight_search`
            // in domain `flight` is `flight_search`, not `flight_flight_search`.
            Some(domain) => {
                let name = handler.name();
                let named_for_domain =
                    name.strip_prefix(domain.as_str()).is_some_and(|rest| rest.len() > 1 && rest.starts_with('_'));
                return Some(if named_for_domain { name } else { format!("{domain}_{name}") });
            }
            None => (handler.name(), handler.ident().span()),
        },
    };
    let Some(domain) = domain else {
        if GENERIC_NAMES.contains(&value.as_str()) {
            errors.push(syn::Error::new(
                span,
                format!("tool name `{value}` is too generic for a global tool: a model confuses it with every domain's `{value}`; give it a name that says what it does"),
            ));
            return None;
        }
        return Some(value);
    };
    let prefix = format!("{domain}_");
    if GENERIC_NAMES.contains(&value.as_str()) {
        errors.push(syn::Error::new(
            span,
            format!("tool name `{value}` is too generic: a model confuses it across domains; use `{prefix}{value}`"),
        ));
        return None;
    }
    if value == prefix {
        errors.push(syn::Error::new(
            span,
            format!("tool name `{value}` has nothing after its domain prefix; write e.g. `{prefix}{}`", handler.name()),
        ));
        return None;
    }
    if !value.starts_with(&prefix) {
        errors.push(syn::Error::new(
            span,
            format!("tool name `{value}` must start with its domain: `{prefix}…` (e.g. `{prefix}{value}`)"),
        ));
        return None;
    }
    Some(value)
}

/// A global tool has no domain to name its machine after.
fn check_global_binding_has_machine(attrs: &ActionAttrs, machine: &Option<LitStr>, errors: &mut Vec<syn::Error>) {
    if let (Some(_), None, Some(global)) = (attrs.bind_state.get(), machine, attrs.global.get()) {
        errors.push(syn::Error::new(
            *global,
            "a `global` tool with `bind_state` needs `machine = \"…\"`: it has no domain to name the machine after",
        ));
    }
}

/// A transition fires *from* a bound state; without one there is nothing to fire from.
fn check_transition_has_states(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) {
    if let (Some(transition), None) = (attrs.transition.get(), attrs.bind_state.get()) {
        errors.push(syn::Error::new(
            transition.span(),
            "`transition` needs `bind_state`: the states the event fires from",
        ));
    }
}

/// `creates`: the instance does not exist before the call, so the action is bound to no
/// state and fires no event; it starts the instance in the machine's initial state.
fn check_creates_is_unbound(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) {
    let Some(&creates) = attrs.creates.get() else { return };
    if attrs.bind_state.get().is_some() || attrs.transition.get().is_some() {
        errors.push(syn::Error::new(
            creates,
            "`creates` starts a new instance in the machine's initial state: it takes no `bind_state` or `transition`",
        ));
    }
    if attrs.global.get().is_some() {
        errors.push(syn::Error::new(creates, "`creates` needs the machine of a domain, or `machine = \"…\"`"));
    }
}

fn check_bind_state_not_empty(attrs: &ActionAttrs, errors: &mut Vec<syn::Error>) {
    if attrs.bind_state.get().is_some_and(Vec::is_empty) {
        let span = attrs.bind_state_span.unwrap_or_else(proc_macro2::Span::call_site);
        errors.push(syn::Error::new(span, "`bind_state` lists no state; remove it to make the tool always available"));
    }
}

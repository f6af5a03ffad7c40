//! Procedural macros of toolgate (the `toolgate` crate). Use them through the
//! `toolgate` crate, which documents them: `toolgate::action` and `toolgate::machine!`.
//!
//! Each entry point is parse → check → expand; on error the user's item is still emitted
//! so one mistake gives one error.

mod action;
mod binding;
mod machine;

use proc_macro::TokenStream;

/// Turns an async handler into a state-gated MCP tool.
///
/// ```text
/// /// Discharge an approved invoice. Does not refund or reopen invoices.
/// #[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
/// async fn discharge(input: InvoiceRef) -> Result<Discharged, ToolError> { … }
/// ```
///
/// The handler is an `async fn … -> Result<O, ToolError>` whose parameters are all
/// optional: the input `I` first, if it takes one, then `State<T>`, `Ctx`, `Principal`,
/// `Instance<T>`, `InstanceMut<T>` and `Transaction` (the call's database transaction on
/// the SQLite file or Postgres: its SQL commits with the transition, or not at all)
/// parameters in any order (`Ctx` at most once). **The
/// first parameter is the input unless its type is written `Ctx`, `State<…>`, `Principal`,
/// `Option<Principal>` or `Transaction`**; every later parameter is filled in by the call through
/// `toolgate::FromCtx`. `I: Deserialize + JsonSchema` gives the tool's `inputSchema`, so
/// its schema must be a JSON object (a struct with named fields). `O: Serialize +
/// JsonSchema` gives the tool's `outputSchema` and `structuredContent`: a struct's fields,
/// or, for an output that is not a JSON object (a `String`, a number, a list, an enum),
/// one field `result` holding it. An output of `toolgate::content::Content` is the
/// result's content blocks instead. The **doc comment is required**: it is the tool's
/// description.
///
/// | key | value | meaning |
/// |---|---|---|
/// | `domain` | `"snake_case"` | the intent domain; the tool is named `{domain}_{fn}`, or `{fn}` when the function's name already starts with `{domain}_` (required unless `global`) |
/// | `global` | flag | the tool belongs to no domain (help, …): callable whatever the active domain |
/// | `bind_state` | `"state"` or `["a", "b"]` | the states in which the tool exists; omit for always |
/// | `transition` | `"EVENT"` | the event a successful call fires (needs `bind_state`) |
/// | `compact` | `"…"` | the description shown while the machine is in its initial state |
/// | `not_for` | `"…"` | what the tool is not for; appended to the description as `Not for: ….` |
/// | `machine` | `"id"` | the machine, when its id differs from the domain (required for bound `global` tools) |
/// | `name` | `"{domain}_…"` | an explicit tool name; it must keep the domain prefix |
/// | `timeout` | `"30s"`, `"500ms"`, `"2m"` | the handler's deadline (default: the server's); past it the call is stopped, nothing is committed, and the caller gets `TIMEOUT` |
/// | `rate_limit` | `"30/minute"`, `"5/second per tool"` (per `second`, `minute`, `hour`, `day`; then `per client`, the default, `per instance` or `per tool`) | at most that many calls in every window of that length, counted per client (its address; stdio: the connection), per keyed instance, or for the whole tool; past it `RATE_LIMITED` with `retry_after_ms`, and the tool's description says so |
/// | `allow_unknown_fields` | flag | arguments the input type does not have are ignored; by default they are refused (`INVALID_ARGUMENT`, "is not a parameter of this tool") |
/// | `startup_checked` | flag | the machine is loaded at start-up (XState JSON): check the binding then |
/// | `creates` | flag | the call creates its keyed instance, under a key the store mints (`mint: "PAY-{n}"`), in the initial state; the handler reads the new id with `ctx.instance()` |
/// | `transactional` | flag | only an authenticated principal may call it (`UNAUTHENTICATED` otherwise); nothing in the arguments stands for one |
/// | `scope` | `"payments:refund"` or `["a", "b"]` | the scopes a principal must hold: without them the tool is not listed to it and a call gets `INSUFFICIENT_SCOPE` |
/// | `confirm` | `"otp"` | every call must be confirmed with a one-time code bound to *this* call (principal, tool, instance, arguments): the first gets `CONFIRMATION_REQUIRED`, the code goes to the person through the server's `OtpSender` (or TOTP), and the call repeated with `challenge_id` and `otp` runs |
/// | `confirm_above` | `"amount > 500.00 EUR"` | with `confirm`: only calls whose `Money` argument is above that amount are confirmed |
/// | `idempotency_key` | `"request_id"` | the argument that names a call: a retry with the same key and arguments gets the first result, with other arguments `IDEMPOTENCY_CONFLICT`; needs `transactional` (a call's records are kept per principal, so there must be one), or it does not compile |
/// | `expensive` | flag | each call costs money or a slow backend: the audit asks for a `rate_limit` |
/// | `task` | `"optional"` or `"required"` | the call may (or must) run as an MCP task for a 2026-07-28 client that declares the Tasks extension: judged in its request, then stored, holding its instance (`TASK_RUNNING` for other changes) and committing once; `required` refuses other clients with `-32021` |
///
/// Bare generic names (`search`, `query`, `get`, `list`, `find`, `run`, `buscar`,
/// `consultar`, …) are refused as explicit names and as global tools' names: a model
/// confuses them across domains.
///
/// The function is emitted unchanged; beside it the macro emits a link-time registration
/// and, for bound actions, a check against the machine that fails to compile *at the
/// offending literal* when a state or event is unknown or the bound state does not accept
/// the event.
#[proc_macro_attribute]
pub fn action(args: TokenStream, item: TokenStream) -> TokenStream {
    action::expand(args.into(), item.into()).into()
}

// The docs are Markdown beside this file, so that the facade crate (`toolgate`) compiles
// their examples as its doctests: they need `toolgate`, which this crate cannot depend on,
// so this crate does not collect them.
#[cfg_attr(not(doctest), doc = include_str!("machine.md"))]
#[proc_macro]
pub fn machine(input: TokenStream) -> TokenStream {
    machine::expand(input.into()).into()
}

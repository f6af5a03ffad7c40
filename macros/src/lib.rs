//! Procedural macros of [toolgate](https://docs.rs/toolgate). Use them through the
//! `toolgate` crate, which documents them: `toolgate::action` and `toolgate::machine!`.
//!
//! Each entry point is parse → check → expand; on error the user's item is still emitted
//! so one mistake gives one error.

mod action;
mod binding;
mod machine;
mod names;

use proc_macro::TokenStream;

/// Turns an async handler into a state-gated MCP tool. See `toolgate::action`.
#[proc_macro_attribute]
pub fn action(args: TokenStream, item: TokenStream) -> TokenStream {
    action::expand(args.into(), item.into()).into()
}

/// Declares a workflow state machine (XState v5 shape). See `toolgate::machine!`.
#[proc_macro]
pub fn machine(input: TokenStream) -> TokenStream {
    machine::expand(input.into()).into()
}

/// Checks an action's `bind_state`/`transition` against its machine. Generated code only:
/// `machine!` defines a `macro_rules!` that forwards the machine's declaration here
/// together with the action's literals, so errors land on those literals.
#[doc(hidden)]
#[proc_macro]
pub fn __check_binding(input: TokenStream) -> TokenStream {
    binding::expand(input.into()).into()
}

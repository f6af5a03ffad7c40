//! What an `#[action]` on a function that is not at module level runs into.
//!
//! Actions are functions at module level, registered by name at link time. Beside each
//! one the macro emits a stand-in with the handler's name, reached only where that name
//! does not reach a module-level function (an associated function in an `impl` block, a
//! function in a function body). Calling the stand-in needs `ThisAction: AtModuleLevel`,
//! which never holds, so the one error says where actions go.

use std::marker::PhantomData;

/// An `#[action]` that is not at module level, as [`AtModuleLevel`]'s error names it.
/// (The lifetime keeps the bound from being checked where the macro declares it.)
#[derive(Debug)]
pub struct ThisAction<'a>(PhantomData<&'a ()>);

/// Implemented by no type: what an `#[action]` on a function inside an `impl` block or a
/// function body runs into. Actions are registered by name at link time, so they are
/// functions at module level; the error says to move the function there.
#[diagnostic::on_unimplemented(
    message = "`#[action]` goes on a function at module level, not inside an `impl` block or a function body",
    label = "this action is not at module level",
    note = "move the function to module level; reach shared values with `State<T>` parameters and `ServerBuilder::state`"
)]
pub trait AtModuleLevel {}

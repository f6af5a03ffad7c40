//! `machine!`: parse → validate (the shared rules of `toolgate-machine`) → expand.

mod ast;
mod expand;
mod guard;
mod validate;

pub(crate) use ast::MachineAst;

use proc_macro2::TokenStream;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let machine: MachineAst = match syn::parse2(input.clone()) {
        Ok(machine) => machine,
        Err(error) => return expand::unparsable(&input, error),
    };
    let errors = validate::validate(&machine);
    expand::expand(&machine, errors)
}

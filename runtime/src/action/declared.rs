//! How an `#[action]` finds the machine it is bound to at compile time, wherever in the
//! crate `machine!` declares it.
//!
//! `machine!` implements [`MachineDeclared`] for its id written as a type,
//! `MachineId<(IdChar<'i'>, IdChar<'n'>, …)>`, with a type of its own as the trait's
//! parameter (so the orphan rule allows the impl in the user's crate). Trait impls are
//! seen from every module, whatever the order of declaration. An action asks for
//! [`declared_machine`] of its machine's id: rustc picks the one impl, or reports the
//! trait's message at the action's literal when there is none (two impls for one id are
//! ambiguous, and rustc names both). The action then checks each of its literals against
//! the [`DeclaredMachine`] in a `const` of its own, spanned at that literal.

use std::marker::PhantomData;

pub use toolgate_machine::declared::{DeclaredMachine, DeclaredState};

/// A machine id written as a type: a tuple of its characters.
#[derive(Debug)]
pub struct MachineId<Chars>(PhantomData<Chars>);

/// One character of a [`MachineId`].
#[derive(Debug)]
pub struct IdChar<const C: char>;

/// Implemented by `machine!` for the id of each machine it declares.
#[diagnostic::on_unimplemented(
    message = "no machine with this id is declared in this crate",
    label = "no `toolgate::machine!` declares this id",
    note = "an action is gated by its domain's machine unless it names another: if the states belong to a machine with another id, say which with `machine = \"…\"` in `#[action(…)]`; else declare it with `toolgate::machine! {{ id: \"…\", … }}` in any module of this crate, or mark the action `startup_checked` if the machine is loaded at start-up"
)]
pub trait MachineDeclared<Declaration> {
    /// The machine as declared.
    const MACHINE: DeclaredMachine;
}

/// The machine declared with id `Id`.
pub const fn declared_machine<Id: MachineDeclared<Declaration>, Declaration>() -> DeclaredMachine {
    Id::MACHINE
}

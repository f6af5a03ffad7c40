//! How an `#[action]` finds the machine it is bound to at compile time, wherever in the
//! crate `machine!` declares it.
//!
//! `machine!` implements [`MachineDeclared`] for `&MachineId<KEY>`, its id written as a
//! type (`KEY` is a 128-bit hash of the id), with a type of its own as the trait's
//! parameter (so the orphan rule allows the impl in the user's crate). Trait impls are
//! seen from every module, whatever the order of declaration. An action probes for its
//! machine's id, `(&&MachineId::<KEY>).machine()` in [`declared_machine`]: the one impl
//! answers, or, with none, [`UndeclaredMachine`] does (one reference further), and the
//! action's own check panics at compile time with a message spanned at the literal (a
//! failed bound would make rustc print these types). The action then checks each of its
//! literals against the [`DeclaredMachine`] in a `const` of its own, spanned at that
//! literal.
//!
//! Two declarations of one id would be two impls, an ambiguity rustc reports once per
//! action; `machine!` claims each id crate-wide (the macros' `binding/claim.rs`), so that
//! a second declaration of an id is one error (E0428, at both ids) and emits no impl.

use std::marker::PhantomData;

pub use toolgate_machine::declared::{DeclaredMachine, DeclaredState};

/// A machine's id written as a type, so that an `#[action]` finds its machine at compile
/// time wherever in the crate `machine!` declares it. `KEY` is a 128-bit hash of the id,
/// which the macros compute (the action compares the id it finds with its own, so a
/// collision cannot mislead it).
#[derive(Debug)]
pub struct MachineId<const KEY: u128>;

/// That a machine with the id `Self` names is declared: `machine!` implements it for
/// `&MachineId<KEY>` of the id it declares, and `#[action]` looks it up. Once per id: a
/// second `machine!` of the id emits no impl (see the module's docs).
pub trait MachineDeclared<Declaration>: Sized {
    /// The machine as declared.
    const MACHINE: DeclaredMachine;

    /// What was found (its type only is used).
    fn machine(&self) -> IsDeclared<Self, Declaration> {
        IsDeclared(PhantomData)
    }
}

/// What a probe found: the declaration of `Id`, or none.
pub trait LookupAnswer {
    /// The machine, if declared.
    const MACHINE: Option<DeclaredMachine>;
}

/// `Id` is declared, by the declaration `Declaration`.
#[derive(Debug)]
pub struct IsDeclared<Id, Declaration>(PhantomData<(Id, Declaration)>);

/// No `machine!` declares the id.
#[derive(Debug)]
pub struct NotDeclared;

impl<Id: MachineDeclared<Declaration>, Declaration> LookupAnswer for IsDeclared<Id, Declaration> {
    const MACHINE: Option<DeclaredMachine> = Some(Id::MACHINE);
}

impl LookupAnswer for NotDeclared {
    const MACHINE: Option<DeclaredMachine> = None;
}

/// The answer where no `machine!` declared the id.
pub trait UndeclaredMachine {
    /// Nothing was found.
    fn machine(&self) -> NotDeclared {
        NotDeclared
    }
}

impl<const KEY: u128> UndeclaredMachine for MachineId<KEY> {}

/// The machine the probe in `_probe` answers with (the closure is never called: its
/// return type carries the answer).
pub const fn declared_machine<Answer: LookupAnswer, F: Fn() -> Answer>(_probe: &F) -> Option<DeclaredMachine> {
    Answer::MACHINE
}

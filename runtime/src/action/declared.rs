//! How an `#[action]` finds the machine it is bound to at compile time, wherever in the
//! crate `machine!` declares it.
//!
//! `machine!` implements [`MachineDeclared`] for its id written as a type,
//! `MachineId<(IdChar<'i'>, IdChar<'n'>, …)>`, with a type of its own as the trait's
//! parameter (so the orphan rule allows the impl in the user's crate). Trait impls are
//! seen from every module, whatever the order of declaration. An action probes for its
//! machine's id ([`MachineLookup`], [`declared_machine`]): the one impl answers, or, with none,
//! the probe answers "not declared" and the action's own check panics at compile time
//! with a message spanned at the literal (a failed bound would make rustc print these
//! types). Two impls for one id are ambiguous, and rustc names both. The action then checks
//! each of its literals against the [`DeclaredMachine`] in a `const` of its own, spanned
//! at that literal.

use std::marker::PhantomData;

pub use toolgate_machine::declared::{DeclaredMachine, DeclaredState};

/// A machine id written as a type: a tuple of its characters.
#[derive(Debug)]
pub struct MachineId<Chars>(PhantomData<Chars>);

/// One character of a [`MachineId`].
#[derive(Debug)]
pub struct IdChar<const C: char>;

/// Implemented by `machine!` for the id of each machine it declares.
pub trait MachineDeclared<Declaration> {
    /// The machine as declared.
    const MACHINE: DeclaredMachine;
}

/// Looks a [`MachineId`] up; `#[action]` asks `(&&MachineLookup::<Id>::new()).machine()`. Where
/// `machine!` declared the id, the method of [`DeclaredByMachine`] answers (one reference fewer to
/// take); elsewhere [`UndeclaredMachine`]'s does, and the action's check then panics with a
/// message of its own, spanned at the id's literal (a bound that failed would make rustc
/// print these types).
#[derive(Debug)]
pub struct MachineLookup<Id>(PhantomData<Id>);

impl<Id> MachineLookup<Id> {
    /// The probe for `Id`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

/// What a [`MachineLookup`] found: the declaration of `Id`, or none.
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

/// The answer where `machine!` declared the id.
pub trait DeclaredByMachine<Declaration> {
    /// What was found.
    type Answer;
    /// What was found (its type only is used).
    fn machine(&self) -> Self::Answer;
}

impl<Id: MachineDeclared<Declaration>, Declaration> DeclaredByMachine<Declaration> for &MachineLookup<Id> {
    type Answer = IsDeclared<Id, Declaration>;
    fn machine(&self) -> Self::Answer {
        IsDeclared(PhantomData)
    }
}

/// The answer where no `machine!` declared the id.
pub trait UndeclaredMachine {
    /// Nothing was found.
    fn machine(&self) -> NotDeclared {
        NotDeclared
    }
}

impl<Id> UndeclaredMachine for MachineLookup<Id> {}

/// The machine the probe in `_probe` answers with (the closure is never called: its
/// return type carries the answer).
pub const fn declared_machine<Answer: LookupAnswer, F: Fn() -> Answer>(_probe: &F) -> Option<DeclaredMachine> {
    Answer::MACHINE
}

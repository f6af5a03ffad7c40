//! [`Caller`]: who is calling, as a guard reads it.

use crate::auth::Principal;

/// Who is calling, for a guard that judges by it (`fn(&Context, &Input, &Caller)`): "you
/// cannot approve your own report" is `if caller.is_owner() { Err(…) }`.
///
/// A guard runs before any confirmation is asked for: a caller it refuses never types a
/// code.
///
/// ```
/// use toolgate_runtime::{Caller, Failure};
/// # #[derive(serde::Deserialize)] struct Report;
/// # #[derive(serde::Deserialize)] struct Approve;
/// fn not_your_own(_: &Report, _: &Approve, caller: &Caller) -> Result<(), Failure> {
///     if caller.is_owner() {
///         return Err(Failure::new("OWN_REPORT", "nobody approves their own report"));
///     }
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    principal: Option<&'a Principal>,
    /// The owner the instance's record keeps (`None`: none, or no instance yet).
    owner: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// `principal` (`None`: the request did not authenticate), on an instance whose record
    /// keeps `owner` (a call that creates one: `None`).
    pub(crate) fn new(principal: Option<&'a Principal>, owner: Option<&'a str>) -> Self {
        Self { principal, owner }
    }

    /// The principal calling; `None` when the server authenticates nobody.
    pub fn principal(&self) -> Option<&'a Principal> {
        self.principal
    }

    /// The principal's subject (`None` without a principal).
    pub fn subject(&self) -> Option<&'a str> {
        self.principal.map(Principal::subject)
    }

    /// The principal's tenant, if it has one.
    pub fn tenant(&self) -> Option<&'a str> {
        self.principal.and_then(Principal::tenant)
    }

    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.principal.is_some_and(|principal| principal.has_scope(scope))
    }

    /// Whether the caller created the instance the call acts on (the owner its record
    /// keeps, on a machine with `owner: principal`). `false` on a machine whose instances
    /// have no owner, on a call that creates one, and without a principal.
    pub fn is_owner(&self) -> bool {
        // Judged only when a guard asks: the owner's digest is not free.
        self.owner.is_some() && self.principal.is_some_and(|principal| principal.owns(self.owner))
    }
}

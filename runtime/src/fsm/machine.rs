//! [`Machine`]: a validated workflow state machine, and what it answers the gate —
//! targets, guards, deadlines — about its states and events.

use std::collections::BTreeMap;

use super::xstate::{self, MachineLoadError};
use super::{Caller, ContextType, Guard, MachineError, MachineSpec, Mint, Transition, Verdict};

/// A validated workflow state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    spec: MachineSpec,
    initial: String,
    /// `context: Payment`: the type of each instance's data (a `machine!` declares it).
    context: Option<ContextType>,
    /// The functions of the guards it names, by name (those it has been given).
    guards: BTreeMap<String, Guard>,
    /// On a principal-owned machine, the scopes whose holders act on any owner's instance
    /// in their tenant (`ServerBuilder::owned_instances_managed_by`).
    managers: Vec<String>,
}

/// Why a guarded event picks no branch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GuardRefusal {
    /// The first guard that refused.
    pub(crate) guard: String,
    /// What it said.
    pub(crate) verdict: Verdict,
}

impl Machine {
    /// The machine, with `context` as the type of its instances' data.
    pub(crate) fn with_context(self, context: Option<ContextType>) -> Self {
        Self { context, ..self }
    }

    /// The type of its instances' data, if it declares one.
    pub(crate) fn context(&self) -> Option<ContextType> {
        self.context
    }

    /// Validates `spec` and returns the machine, or every problem found.
    pub fn new(spec: MachineSpec) -> Result<Self, Vec<MachineError>> {
        let errors = spec.validate();
        match (&spec.initial, errors.is_empty()) {
            (Some(initial), true) => Ok(Self {
                initial: initial.clone(),
                spec,
                context: None,
                guards: BTreeMap::new(),
                managers: Vec::new(),
            }),
            _ => Err(errors),
        }
    }

    /// Loads a machine from XState v5 JSON (`{"id", "initial", "states": {…}}`) and
    /// validates it. Errors name the offending key (`states.review.on.APPROVE`).
    ///
    /// ```
    /// use toolgate_runtime::Machine;
    /// let m = Machine::from_xstate_json(r#"{
    ///   "id": "door", "initial": "closed",
    ///   "states": { "closed": { "on": { "OPEN": "open" } }, "open": { "on": { "CLOSE": "closed" } } }
    /// }"#).unwrap();
    /// assert_eq!(m.target("closed", "OPEN"), Some("open"));
    ///
    /// let err = Machine::from_xstate_json(r#"{"id": "door", "initial": "closed",
    ///   "states": { "closed": { "on": { "OPEN": "opne" } } }}"#).unwrap_err();
    /// assert!(err.to_string().contains("`states.closed.on.OPEN` targets unknown state `opne`"));
    /// ```
    pub fn from_xstate_json(json: &str) -> Result<Self, MachineLoadError> {
        let spec = xstate::parse(json)?;
        Self::new(spec).map_err(MachineLoadError::Invalid)
    }

    /// The machine's id.
    pub fn id(&self) -> &str {
        &self.spec.id
    }

    /// Gives the machine one instance per value of the `key` argument (`"id"`), shared by
    /// every conversation; what `key: "id"` does in `machine!`, for machines loaded at
    /// start-up.
    ///
    /// ```
    /// use toolgate_runtime::Machine;
    /// let m = Machine::from_xstate_json(r#"{"id": "door", "initial": "closed",
    ///   "states": { "closed": { "on": { "OPEN": "open" } }, "open": {} }}"#).unwrap();
    /// assert_eq!(m.keyed_by("door_id").unwrap().key(), Some("door_id"));
    /// ```
    pub fn keyed_by(self, key: impl Into<String>) -> Result<Self, Vec<MachineError>> {
        Ok(Self {
            context: self.context,
            guards: self.guards,
            managers: self.managers,
            ..Self::new(MachineSpec { key: Some(key.into()), ..self.spec })?
        })
    }

    /// The argument that names an instance, for a keyed machine.
    pub fn key(&self) -> Option<&str> {
        self.spec.key.as_deref()
    }

    /// The same keyed machine with its instances named per tenant: what `scope: tenant`
    /// does in `machine!`, for machines loaded at start-up.
    pub fn scoped_per_tenant(self) -> Result<Self, Vec<MachineError>> {
        Ok(Self {
            context: self.context,
            guards: self.guards,
            managers: self.managers,
            ..Self::new(MachineSpec { tenant_scoped: true, ..self.spec })?
        })
    }

    /// The same keyed machine with each instance its creator's: what `owner: principal`
    /// does in `machine!`, for machines loaded at start-up.
    pub fn owned_by_principal(self) -> Result<Self, Vec<MachineError>> {
        Ok(Self {
            context: self.context,
            guards: self.guards,
            managers: self.managers,
            ..Self::new(MachineSpec { principal_owned: true, ..self.spec })?
        })
    }

    /// The format new instances' keys are minted in (`mint: "PAY-{n}"`), for a machine
    /// whose instances are created by an action (`#[action(creates)]`) rather than named
    /// into existence by any call.
    pub fn mint(&self) -> Option<&str> {
        self.spec.mint.as_deref()
    }

    /// The `mint` format and what it mints (a counter's number, or random bits).
    pub(crate) fn minting(&self) -> Option<(&str, Mint)> {
        let format = self.mint()?;
        // Validation refused a format that mints neither.
        Some((format, Mint::parse(format)?))
    }

    /// Whether an instance is named by the caller's tenant and the key (`scope: tenant`):
    /// one key in two tenants is two objects, and a call needs a principal.
    pub fn is_tenant_scoped(&self) -> bool {
        self.spec.tenant_scoped
    }

    /// Whether an instance belongs to the principal whose call created it (`owner:
    /// principal`): it is named by that principal and the key, so another caller naming
    /// the key names nothing of it, and a call needs a principal.
    pub fn is_principal_owned(&self) -> bool {
        self.spec.principal_owned
    }

    /// Whether the instances of this machine belong to someone (a tenant or a principal),
    /// so that a call naming one needs a principal.
    pub fn is_owned(&self) -> bool {
        self.spec.tenant_scoped || self.spec.principal_owned
    }

    /// The initial state.
    pub fn initial(&self) -> &str {
        &self.initial
    }

    /// The declaration this machine was built from.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// Whether `state` is a state of this machine.
    pub fn has_state(&self, state: &str) -> bool {
        self.spec.state(state).is_some()
    }

    /// The state `event` leads to from `state`, if that state accepts it (its first
    /// branch's, for an event with guarded branches).
    pub fn target(&self, state: &str, event: &str) -> Option<&str> {
        self.spec.target(state, event)
    }

    /// The machine whose owned instances holders of any of `scopes` act on, whoever owns them.
    pub(crate) fn managed_by(mut self, scopes: &[String]) -> Self {
        self.managers = scopes.to_vec();
        self
    }

    /// The scopes whose holders act on any owner's instance (none: only the owner does).
    pub fn managers(&self) -> &[String] {
        &self.managers
    }

    /// The machine with `guard` as the function of the guard its name names.
    pub(crate) fn with_guard(mut self, guard: Guard) -> Self {
        self.guards.insert(guard.name().to_string(), guard);
        self
    }

    /// The guards it names that it has no function for.
    pub(crate) fn missing_guards(&self) -> Vec<&str> {
        self.spec.guards().into_iter().filter(|name| !self.guards.contains_key(*name)).collect()
    }

    /// Whether `event` from `state` is guarded (some branch names a guard).
    pub(crate) fn is_guarded(&self, state: &str, event: &str) -> bool {
        self.spec.state(state).is_some_and(|s| s.on.iter().any(|t| t.event == event && t.guard.is_some()))
    }

    /// The branch `event` takes from `state` for a call by `caller` with `input` on an
    /// instance holding `context`: the first whose guard passes, or `Ok(None)` when the state does
    /// not accept the event; the first guard that refused when none passes.
    pub(crate) fn choose(
        &self,
        state: &str,
        event: &str,
        context: Option<&serde_json::Value>,
        input: &serde_json::Map<String, serde_json::Value>,
        caller: &Caller<'_>,
    ) -> Result<Option<&Transition>, Box<GuardRefusal>> {
        let mut refusal = None;
        let on = self.spec.state(state).map(|s| s.on.as_slice()).unwrap_or_default();
        for branch in on.iter().filter(|t| t.event == event) {
            let Some(name) = &branch.guard else { return Ok(Some(branch)) };
            let verdict = match self.guards.get(name) {
                Some(guard) => guard.judge(context, input, caller),
                // Start-up refuses a machine naming a guard it has no function for.
                None => Verdict::InputUnreadable("(a guard with no function)"),
            };
            match verdict {
                Verdict::Pass => return Ok(Some(branch)),
                verdict => {
                    refusal.get_or_insert(GuardRefusal { guard: name.clone(), verdict });
                }
            }
        }
        match refusal {
            Some(refusal) => Err(Box::new(refusal)),
            None => Ok(None),
        }
    }
}

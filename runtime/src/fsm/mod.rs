//! Workflow state machines at run time: the validated [`Machine`] the gate consults, and
//! the XState v5 JSON loader for machines authored outside Rust.
//!
//! The rules themselves live in `toolgate-machine`, shared with the macros, so a machine
//! declared with `machine!` and the same machine loaded from JSON are judged identically.

mod xstate;

pub use toolgate_machine::{BindingError, MachineError, MachineSpec, StateSpec, Transition};
pub use xstate::MachineLoadError;

/// A validated workflow state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    spec: MachineSpec,
    initial: String,
    /// `context: Payment`: the type of each instance's data (a `machine!` declares it).
    context: Option<crate::action::ContextType>,
}

impl Machine {
    /// The machine, with `context` as the type of its instances' data.
    pub(crate) fn with_context(self, context: Option<crate::action::ContextType>) -> Self {
        Self { context, ..self }
    }

    /// The type of its instances' data, if it declares one.
    pub(crate) fn context(&self) -> Option<crate::action::ContextType> {
        self.context
    }

    /// Validates `spec` and returns the machine, or every problem found.
    pub fn new(spec: MachineSpec) -> Result<Self, Vec<MachineError>> {
        let errors = spec.validate();
        match (&spec.initial, errors.is_empty()) {
            (Some(initial), true) => Ok(Self { initial: initial.clone(), spec, context: None }),
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
        Self::new(MachineSpec { key: Some(key.into()), ..self.spec })
    }

    /// The argument that names an instance, for a keyed machine.
    pub fn key(&self) -> Option<&str> {
        self.spec.key.as_deref()
    }

    /// The same keyed machine with its instances named per tenant: what `scope: tenant`
    /// does in `machine!`, for machines loaded at start-up.
    pub fn scoped_per_tenant(self) -> Result<Self, Vec<MachineError>> {
        Self::new(MachineSpec { tenant_scoped: true, ..self.spec })
    }

    /// The format new instances' keys are minted in (`mint: "PAY-{n}"`), for a machine
    /// whose instances are created by an action (`#[action(creates)]`) rather than named
    /// into existence by any call.
    pub fn mint(&self) -> Option<&str> {
        self.spec.mint.as_deref()
    }

    /// Whether an instance is named by the caller's tenant and the key (`scope: tenant`):
    /// one key in two tenants is two objects, and a call needs a principal.
    pub fn is_tenant_scoped(&self) -> bool {
        self.spec.tenant_scoped
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

    /// The state `event` leads to from `state`, if that state accepts it.
    pub fn target(&self, state: &str, event: &str) -> Option<&str> {
        self.spec.target(state, event)
    }
}

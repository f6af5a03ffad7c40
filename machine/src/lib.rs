//! The workflow state-machine model of toolgate and every rule about it.
//!
//! Machines follow the XState v5 shape (`id`, `initial`, `states`, `on` with string
//! targets, `type: "final"`). The same rules run in two places, which is why they live in
//! this small dependency-free crate:
//!
//! - at compile time: inside `toolgate::machine!` for declarations, and for bindings in
//!   the `const fn`s of [`declared`], which rustc evaluates where each `#[action]` is
//!   compiled (each problem is reported at the offending literal);
//! - at start-up, for machines loaded from XState JSON (the runtime reports the key).
//!
//! Validation collects *every* problem instead of stopping at the first, so an author sees
//! them all at once.

pub mod grammar;

use std::collections::{BTreeSet, HashSet};

pub mod declared;

/// A machine as declared: the XState v5 subset toolgate understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineSpec {
    /// The machine's id (`"invoice"`). Actions refer to it by this id.
    pub id: String,
    /// The initial state; `None` when the declaration omits it (an error).
    pub initial: Option<String>,
    /// The argument that names an instance (`"id"`): the machine then has one instance per
    /// value of it, shared by every conversation. `None`: one instance per conversation.
    pub key: Option<String>,
    /// `scope: tenant`: an instance is named by the caller's tenant *and* the key, so one
    /// key in two tenants is two objects. Needs a `key`.
    pub tenant_scoped: bool,
    /// `owner: principal`: an instance belongs to the principal whose call created it. It
    /// is named by that principal *and* the key, so another caller naming the same key
    /// names nothing of the owner's (what it gets is what a key never created gets), and
    /// every call needs a principal. Needs a `key`.
    pub principal_owned: bool,
    /// `mint: "PAY-{n}"` or `mint: "Q-{random}"`: toolgate mints the key of each new
    /// instance (`{n}` a durable counter in the store, never reused across restarts or
    /// replicas; `{random}` 128 random bits, which no one guesses), an action marked
    /// `creates` creates it, and a call naming a key never created is refused. Needs a
    /// `key`.
    pub mint: Option<String>,
    /// The states in declaration order.
    pub states: Vec<StateSpec>,
}

/// One state of a [`MachineSpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSpec {
    /// The state's name (`"approved"`).
    pub name: String,
    /// `type: "final"`: the workflow ends here and no event leaves it.
    pub is_final: bool,
    /// The transitions out of this state, in declaration order. An event guarded by
    /// several branches (XState's array form) has one entry per branch, next to each
    /// other: the first whose guard passes picks the target.
    pub on: Vec<Transition>,
    /// The transitions time fires (`after: { "PT15M": "expired" }`), in declaration order.
    pub after: Vec<Delayed>,
    /// The effects run when an instance enters this state (XState's `entry`), by name, in
    /// order: by a call's transition, its creation, or time.
    pub entry: Vec<String>,
    /// The effects run when an instance leaves this state (XState's `exit`).
    pub exit: Vec<String>,
}

/// One `on` entry: `event` moves the machine to `target`, if `guard` passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The event name (`"DISCHARGE"`).
    pub event: String,
    /// The state the event leads to.
    pub target: String,
    /// The guard that must pass for this branch to be taken (`guard: "fully_funded"`): a
    /// function of the instance's context and the call's input, named here.
    pub guard: Option<String>,
    /// `reenter: true` (XState v5): a transition to the state it leaves exits and enters
    /// that state again, so the state's `after` clock starts again. Without it (XState
    /// v5's default) such a transition stays in the state and its deadline stands. A
    /// transition to another state enters it either way.
    pub reenter: bool,
}

impl Transition {
    /// An unguarded transition.
    pub fn new(event: impl Into<String>, target: impl Into<String>) -> Self {
        Self { event: event.into(), target: target.into(), guard: None, reenter: false }
    }
}

/// One `after` entry: once the machine has been `after_ms` milliseconds in its state, it
/// moves to `target` by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delayed {
    /// How long the machine stays in the state, in milliseconds (above zero).
    pub after_ms: u64,
    /// The state time moves it to.
    pub target: String,
}

/// A problem with a machine declaration. Each variant names the key that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    /// The machine has no `id` or an empty one.
    #[error("machine has an empty `id`")]
    EmptyId,
    /// `initial` is missing.
    #[error("machine `{machine}` has no `initial` state; add `initial: \"<state>\"`")]
    MissingInitial {
        /// The machine's id.
        machine: String,
    },
    /// `initial` names a state that is not declared.
    #[error("machine `{machine}`: `initial` names unknown state `{initial}`; valid states: {valid}")]
    UnknownInitial {
        /// The machine's id.
        machine: String,
        /// The unknown state.
        initial: String,
        /// The declared states, comma-separated.
        valid: String,
    },
    /// `states` is empty.
    #[error("machine `{machine}` declares no `states`")]
    NoStates {
        /// The machine's id.
        machine: String,
    },
    /// Two states share a name.
    #[error("machine `{machine}`: state `{state}` is declared twice")]
    DuplicateState {
        /// The machine's id.
        machine: String,
        /// The repeated state name.
        state: String,
    },
    /// One state lists the same event twice.
    #[error("machine `{machine}`: state `{state}` lists event `{event}` twice")]
    DuplicateEvent {
        /// The machine's id.
        machine: String,
        /// The state whose `on` repeats the event.
        state: String,
        /// The repeated event.
        event: String,
    },
    /// `mint` without a `key`: there is no key to mint.
    #[error("machine `{machine}` has `mint` but no `key`: only instances named by a key are minted")]
    MintWithoutKey {
        /// The machine's id.
        machine: String,
    },
    /// `mint` is not a format with one `{n}` or one `{random}`.
    #[error(
        "machine `{machine}`: `mint: \"{format}\"` must hold exactly one of `{{n}}` (a counter, e.g. `\"PAY-{{n}}\"`) or `{{random}}` (128 random bits, e.g. `\"Q-{{random}}\"`), and no other `{{` or `}}`"
    )]
    InvalidMint {
        /// The machine's id.
        machine: String,
        /// The format as written.
        format: String,
    },
    /// A branch follows an unguarded branch of the same event, which always wins.
    #[error(
        "machine `{machine}`: `states.{state}.on.{event}` has a branch after one without a guard, which always wins; put the branch without a guard last"
    )]
    UnreachableBranch {
        /// The machine's id.
        machine: String,
        /// The state whose `on` holds the branches.
        state: String,
        /// The event.
        event: String,
    },
    /// A guard name that is not a function path.
    #[error(
        "machine `{machine}`: guard `{guard}` must name a function (letters, digits, `_` and `::`), e.g. `\"fully_funded\"`"
    )]
    InvalidGuard {
        /// The machine's id.
        machine: String,
        /// The guard as written.
        guard: String,
    },
    /// An `after` entry targets a state that is not declared.
    #[error("machine `{machine}`: `states.{state}.after` targets unknown state `{target}`; valid states: {valid}")]
    UnknownDelayedTarget {
        /// The machine's id.
        machine: String,
        /// The state whose `after` holds the transition.
        state: String,
        /// The unknown target.
        target: String,
        /// The declared states, comma-separated.
        valid: String,
    },
    /// `after` on a machine without a `key`: time moves instances, and a conversation's
    /// machine is not one.
    #[error(
        "machine `{machine}`: `states.{state}.after` needs instances that outlive a request, and this machine has no `key` (add `key: \"…\"`, the argument naming an instance)"
    )]
    AfterWithoutKey {
        /// The machine's id.
        machine: String,
        /// The state with `after`.
        state: String,
    },
    /// A transition targets a state that is not declared.
    #[error("machine `{machine}`: `states.{state}.on.{event}` targets unknown state `{target}`; valid states: {valid}")]
    UnknownTarget {
        /// The machine's id.
        machine: String,
        /// The state whose `on` holds the transition.
        state: String,
        /// The event of the transition.
        event: String,
        /// The unknown target.
        target: String,
        /// The declared states, comma-separated.
        valid: String,
    },
    /// A final state has transitions.
    #[error(
        "machine `{machine}`: state `{state}` is `type: \"final\"` but has transitions; a final state accepts no events"
    )]
    FinalWithTransitions {
        /// The machine's id.
        machine: String,
        /// The final state.
        state: String,
    },
    /// `key` is not a plain argument name.
    #[error(
        "machine `{machine}`: `key` `{key}` must be an argument name (letters, digits and `_`, not starting with a digit)"
    )]
    InvalidKey {
        /// The machine's id.
        machine: String,
        /// The key as written.
        key: String,
    },
    /// `scope: tenant` on a machine without a `key`: a conversation's machine already
    /// belongs to the one caller that holds the conversation.
    #[error(
        "machine `{machine}`: `scope: tenant` names instances by tenant and key, and this machine has no `key` (a machine without one has an instance per conversation, which is already its caller's alone)"
    )]
    TenantScopeWithoutKey {
        /// The machine's id.
        machine: String,
    },
    /// `owner: principal` on a machine without a `key`: a conversation's machine already
    /// belongs to the one caller that holds the conversation.
    #[error(
        "machine `{machine}`: `owner: principal` names instances by their owner and key, and this machine has no `key` (a machine without one has an instance per conversation, which is already its caller's alone)"
    )]
    OwnerWithoutKey {
        /// The machine's id.
        machine: String,
    },
    /// A state cannot be reached from `initial`. toolgate treats this as an error: a tool
    /// bound to it could never be called, which is almost always a typo in a target.
    #[error("machine `{machine}`: state `{state}` is unreachable from initial state `{initial}`")]
    Unreachable {
        /// The machine's id.
        machine: String,
        /// The unreachable state.
        state: String,
        /// The initial state.
        initial: String,
    },
}

/// What a `mint` format puts in each new key: a counter's next number, or random bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mint {
    /// `{n}`: the next number of a durable counter (sequential, so guessable).
    Counter,
    /// `{random}`: 128 random bits (26 characters of base32), which no one guesses.
    Random,
}

impl Mint {
    /// What `format` mints, if it holds exactly one `{n}` or one `{random}` and no other
    /// brace.
    pub fn parse(format: &str) -> Option<Self> {
        let holds = |placeholder: &str| {
            format.matches(placeholder).count() == 1 && !format.replace(placeholder, "").contains(['{', '}'])
        };
        if holds("{n}") {
            Some(Self::Counter)
        } else if holds("{random}") {
            Some(Self::Random)
        } else {
            None
        }
    }

    /// The placeholder it replaces in a format.
    pub fn placeholder(self) -> &'static str {
        match self {
            Self::Counter => "{n}",
            Self::Random => "{random}",
        }
    }
}

impl MachineSpec {
    /// The state called `name`, if declared.
    pub fn state(&self, name: &str) -> Option<&StateSpec> {
        self.states.iter().find(|s| s.name == name)
    }

    /// The declared state names, comma-separated, for messages.
    pub fn state_list(&self) -> String {
        join(self.states.iter().map(|s| s.name.as_str()))
    }

    /// Every event some state accepts, sorted and deduplicated.
    pub fn events(&self) -> BTreeSet<&str> {
        self.states.iter().flat_map(|s| s.on.iter().map(|t| t.event.as_str())).collect()
    }

    /// Checks the declaration and returns every problem found (empty when valid).
    pub fn validate(&self) -> Vec<MachineError> {
        let mut errors = Vec::new();
        let machine = || self.id.clone();
        if self.id.is_empty() {
            errors.push(MachineError::EmptyId);
        }
        if self.states.is_empty() {
            errors.push(MachineError::NoStates { machine: machine() });
        }
        if let Some(key) = self.key.as_ref().filter(|key| !is_argument_name(key)) {
            errors.push(MachineError::InvalidKey { machine: machine(), key: key.clone() });
        }
        if self.tenant_scoped && self.key.is_none() {
            errors.push(MachineError::TenantScopeWithoutKey { machine: machine() });
        }
        if self.principal_owned && self.key.is_none() {
            errors.push(MachineError::OwnerWithoutKey { machine: machine() });
        }
        if let Some(format) = &self.mint {
            if self.key.is_none() {
                errors.push(MachineError::MintWithoutKey { machine: machine() });
            }
            if Mint::parse(format).is_none() {
                errors.push(MachineError::InvalidMint { machine: machine(), format: format.clone() });
            }
        }
        let mut seen = HashSet::new();
        for state in &self.states {
            if !seen.insert(state.name.as_str()) {
                errors.push(MachineError::DuplicateState { machine: machine(), state: state.name.clone() });
            }
            if state.is_final && !(state.on.is_empty() && state.after.is_empty()) {
                errors.push(MachineError::FinalWithTransitions { machine: machine(), state: state.name.clone() });
            }
            let mut events = HashSet::new();
            for (i, t) in state.on.iter().enumerate() {
                let previous = i.checked_sub(1).map(|p| &state.on[p]).filter(|p| p.event == t.event);
                match previous {
                    // Another branch of the event: only after a guarded one.
                    Some(previous) if previous.guard.is_none() => errors.push(MachineError::UnreachableBranch {
                        machine: machine(),
                        state: state.name.clone(),
                        event: t.event.clone(),
                    }),
                    Some(_) => {}
                    None if !events.insert(t.event.as_str()) => errors.push(MachineError::DuplicateEvent {
                        machine: machine(),
                        state: state.name.clone(),
                        event: t.event.clone(),
                    }),
                    None => {}
                }
                if let Some(guard) = t.guard.as_ref().filter(|g| !is_function_path(g)) {
                    errors.push(MachineError::InvalidGuard { machine: machine(), guard: guard.clone() });
                }
                if self.state(&t.target).is_none() {
                    errors.push(MachineError::UnknownTarget {
                        machine: machine(),
                        state: state.name.clone(),
                        event: t.event.clone(),
                        target: t.target.clone(),
                        valid: self.state_list(),
                    });
                }
            }
        }
        for state in self.states.iter().filter(|s| !s.after.is_empty()) {
            if self.key.is_none() {
                errors.push(MachineError::AfterWithoutKey { machine: machine(), state: state.name.clone() });
            }
            for delayed in state.after.iter().filter(|d| self.state(&d.target).is_none()) {
                errors.push(MachineError::UnknownDelayedTarget {
                    machine: machine(),
                    state: state.name.clone(),
                    target: delayed.target.clone(),
                    valid: self.state_list(),
                });
            }
        }
        match &self.initial {
            None => errors.push(MachineError::MissingInitial { machine: machine() }),
            Some(initial) if self.state(initial).is_none() => {
                if !self.states.is_empty() {
                    errors.push(MachineError::UnknownInitial {
                        machine: machine(),
                        initial: initial.clone(),
                        valid: self.state_list(),
                    });
                }
            }
            Some(initial) => {
                let reachable = self.reachable_from(initial);
                for state in &self.states {
                    if !reachable.contains(state.name.as_str()) {
                        errors.push(MachineError::Unreachable {
                            machine: machine(),
                            state: state.name.clone(),
                            initial: initial.clone(),
                        });
                    }
                }
            }
        }
        errors
    }

    fn reachable_from<'a>(&'a self, start: &'a str) -> HashSet<&'a str> {
        let mut reachable = HashSet::from([start]);
        let mut frontier = vec![start];
        while let Some(name) = frontier.pop() {
            let Some(state) = self.state(name) else { continue };
            let targets =
                state.on.iter().map(|t| t.target.as_str()).chain(state.after.iter().map(|d| d.target.as_str()));
            for target in targets {
                if reachable.insert(target) {
                    frontier.push(target);
                }
            }
        }
        reachable
    }

    /// Checks an action's binding against this machine: every bound state exists, the
    /// event exists, and every bound state accepts the event. Returns every problem.
    pub fn check_binding(&self, bind_states: &[&str], transition: Option<&str>) -> Vec<BindingError> {
        let mut errors = Vec::new();
        for (index, state) in bind_states.iter().enumerate() {
            if self.state(state).is_none() {
                errors.push(BindingError::UnknownState {
                    index,
                    machine: self.id.clone(),
                    state: state.to_string(),
                    valid: self.state_list(),
                });
            }
        }
        let Some(event) = transition else {
            return errors;
        };
        if !self.events().contains(event) {
            errors.push(BindingError::UnknownEvent {
                machine: self.id.clone(),
                event: event.to_string(),
                valid: join(self.events()),
            });
            return errors;
        }
        for state in bind_states.iter().filter_map(|s| self.state(s)) {
            if !state.on.iter().any(|t| t.event == event) {
                let accepted = join(state.on.iter().map(|t| t.event.as_str()));
                errors.push(BindingError::EventNotAccepted {
                    machine: self.id.clone(),
                    state: state.name.clone(),
                    event: event.to_string(),
                    accepted: if accepted.is_empty() { "none".into() } else { accepted },
                });
            }
        }
        errors
    }

    /// The state `event` leads to from `state`, if that state accepts it: its first
    /// branch's, for an event with guarded branches ([`MachineSpec::branches`] gives all).
    pub fn target(&self, state: &str, event: &str) -> Option<&str> {
        self.state(state)?.on.iter().find(|t| t.event == event).map(|t| t.target.as_str())
    }

    /// The branches of `event` in `state`, in order: the first whose guard passes (or
    /// that has none) is taken.
    pub fn branches<'a>(&'a self, state: &str, event: &'a str) -> impl Iterator<Item = &'a Transition> + 'a {
        let on = self.state(state).map(|s| s.on.as_slice()).unwrap_or_default();
        on.iter().filter(move |t| t.event == event)
    }

    /// Every guard the machine names, each once, in declaration order.
    pub fn guards(&self) -> Vec<&str> {
        let mut guards: Vec<&str> = Vec::new();
        for guard in self.states.iter().flat_map(|s| s.on.iter().filter_map(|t| t.guard.as_deref())) {
            if !guards.contains(&guard) {
                guards.push(guard);
            }
        }
        guards
    }

    /// The transition time fires first in `state` (the shortest `after`), if any.
    pub fn first_delayed(&self, state: &str) -> Option<&Delayed> {
        self.state(state)?.after.iter().min_by_key(|d| d.after_ms)
    }

    /// Checks that an action bound to this machine can name an instance: a keyed
    /// machine's actions need an input (which must have the key field; only the runtime
    /// can see the input type's fields).
    pub fn check_instance_input(&self, takes_input: bool) -> Option<BindingError> {
        let key = self.key.as_ref()?;
        (!takes_input).then(|| BindingError::KeyMissing {
            machine: self.id.clone(),
            key: key.clone(),
            problem: "the handler takes no input".into(),
        })
    }
}

/// Whether `name` is a Rust path to a function (`fully_funded`, `rules::fully_funded`).
fn is_function_path(name: &str) -> bool {
    name.split("::").all(is_argument_name)
}

/// Whether `name` can be a JSON argument name toolgate reads as a machine key.
fn is_argument_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A problem with an action's `bind_state` / `transition` against its machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// A bound state is not a state of the machine.
    #[error("machine `{machine}` has no state `{state}`; valid states: {valid}")]
    UnknownState {
        /// Position of the state in `bind_state`, so a caller can point at it.
        index: usize,
        /// The machine's id.
        machine: String,
        /// The unknown state.
        state: String,
        /// The declared states, comma-separated.
        valid: String,
    },
    /// The transition names an event no state accepts.
    #[error("machine `{machine}` has no event `{event}`; valid events: {valid}")]
    UnknownEvent {
        /// The machine's id.
        machine: String,
        /// The unknown event.
        event: String,
        /// The events the machine knows, comma-separated.
        valid: String,
    },
    /// A bound state does not accept the transition's event.
    #[error("machine `{machine}`: state `{state}` does not accept event `{event}`; it accepts: {accepted}")]
    EventNotAccepted {
        /// The machine's id.
        machine: String,
        /// The bound state.
        state: String,
        /// The event.
        event: String,
        /// The events the state accepts, comma-separated (or `none`).
        accepted: String,
    },
    /// The machine is keyed, and the action's input cannot name an instance.
    #[error(
        "machine `{machine}` has one instance per `{key}`, so its actions must take an input with a required `{key}` field (a string or an integer); {problem}"
    )]
    KeyMissing {
        /// The machine's id.
        machine: String,
        /// The machine's key.
        key: String,
        /// What is wrong with the input.
        problem: String,
    },
}

fn join<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str, on: &[(&str, &str)]) -> StateSpec {
        StateSpec {
            name: name.into(),
            is_final: false,
            on: on.iter().map(|(e, t)| Transition::new(*e, *t)).collect(),
            after: vec![],
            entry: vec![],
            exit: vec![],
        }
    }

    fn invoice() -> MachineSpec {
        MachineSpec {
            id: "invoice".into(),
            initial: Some("draft".into()),
            key: None,
            tenant_scoped: false,
            principal_owned: false,
            mint: None,
            states: vec![
                state("draft", &[("SUBMIT", "review")]),
                state("review", &[("APPROVE", "approved"), ("REJECT", "draft")]),
                state("approved", &[("DISCHARGE", "discharged")]),
                StateSpec { is_final: true, ..state("discharged", &[]) },
            ],
        }
    }

    #[test]
    fn the_invoice_machine_is_valid() {
        assert_eq!(invoice().validate(), vec![]);
        assert_eq!(invoice().target("review", "REJECT"), Some("draft"));
        assert_eq!(invoice().target("draft", "APPROVE"), None);
    }

    #[test]
    fn an_unknown_target_names_state_event_and_choices() {
        let mut m = invoice();
        m.states[2].on[0].target = "dischargd".into();
        let errors = m.validate();
        assert!(errors.contains(&MachineError::UnknownTarget {
            machine: "invoice".into(),
            state: "approved".into(),
            event: "DISCHARGE".into(),
            target: "dischargd".into(),
            valid: "draft, review, approved, discharged".into(),
        }));
        // The misspelt target also leaves `discharged` unreachable: both are reported.
        assert!(errors.contains(&MachineError::Unreachable {
            machine: "invoice".into(),
            state: "discharged".into(),
            initial: "draft".into(),
        }));
        assert_eq!(
            errors[0].to_string(),
            "machine `invoice`: `states.approved.on.DISCHARGE` targets unknown state `dischargd`; \
             valid states: draft, review, approved, discharged"
        );
    }

    #[test]
    fn missing_and_unknown_initial_are_errors() {
        let mut m = invoice();
        m.initial = None;
        assert_eq!(m.validate(), vec![MachineError::MissingInitial { machine: "invoice".into() }]);
        m.initial = Some("drafty".into());
        assert!(matches!(&m.validate()[..], [MachineError::UnknownInitial { initial, .. }] if initial == "drafty"));
    }

    #[test]
    fn a_final_state_with_transitions_is_an_error() {
        let mut m = invoice();
        m.states[3].on.push(Transition::new("REOPEN", "draft"));
        assert!(
            m.validate().contains(&MachineError::FinalWithTransitions {
                machine: "invoice".into(),
                state: "discharged".into()
            })
        );
    }

    #[test]
    fn duplicates_and_empty_machines_are_errors() {
        let mut m = invoice();
        m.states.push(state("draft", &[]));
        m.states[0].on.push(Transition::new("REVIEW_AGAIN", "review"));
        m.states[0].on.push(Transition::new("SUBMIT", "review"));
        let errors = m.validate();
        assert!(errors.iter().any(|e| matches!(e, MachineError::DuplicateState { state, .. } if state == "draft")));
        assert!(errors.iter().any(|e| matches!(e, MachineError::DuplicateEvent { event, .. } if event == "SUBMIT")));
        let empty = MachineSpec {
            id: String::new(),
            initial: Some("a".into()),
            key: None,
            tenant_scoped: false,
            principal_owned: false,
            mint: None,
            states: vec![],
        };
        assert_eq!(empty.validate(), vec![MachineError::EmptyId, MachineError::NoStates { machine: String::new() }]);
    }

    #[test]
    fn guarded_branches_and_delays_are_checked() {
        let guarded = |guard: Option<&str>, target: &str| Transition {
            event: "REVIEW".into(),
            target: target.into(),
            guard: guard.map(Into::into),
            reenter: false,
        };
        let mut m = MachineSpec { key: Some("id".into()), ..invoice() };
        m.states[1].on.push(guarded(Some("small_amount"), "approved"));
        m.states[1].on.push(guarded(None, "draft"));
        m.states[2].after.push(Delayed { after_ms: 900_000, target: "discharged".into() });
        assert_eq!(m.validate(), vec![]);
        assert_eq!(
            m.branches("review", "REVIEW").map(|t| t.target.as_str()).collect::<Vec<_>>(),
            ["approved", "draft"]
        );
        assert_eq!(m.guards(), ["small_amount"]);
        assert_eq!(m.first_delayed("approved").map(|d| d.after_ms), Some(900_000));

        let mut unreachable = m.clone();
        unreachable.states[1].on.push(guarded(Some("late"), "approved"));
        assert!(
            matches!(&unreachable.validate()[..], [MachineError::UnreachableBranch { event, .. }] if event == "REVIEW")
        );
        let mut bad_guard = m.clone();
        bad_guard.states[1].on[2].guard = Some("not a function".into());
        assert!(matches!(&bad_guard.validate()[..], [MachineError::InvalidGuard { .. }]));
        let mut bad_delay = m.clone();
        bad_delay.states[2].after[0].target = "dischargd".into();
        assert!(bad_delay.validate().iter().any(|e| matches!(e, MachineError::UnknownDelayedTarget { .. })));
        let unkeyed = MachineSpec { key: None, ..m.clone() };
        assert!(
            matches!(&unkeyed.validate()[..], [MachineError::AfterWithoutKey { state, .. }] if state == "approved")
        );
        // A state only time leaves is reachable through it.
        let mut timed = m;
        timed.states[2].on.clear();
        timed.states[2].after[0].target = "discharged".into();
        assert_eq!(timed.validate(), vec![]);
    }

    #[test]
    fn keys_must_be_argument_names_and_keyed_actions_take_input() {
        let keyed = MachineSpec { key: Some("id".into()), ..invoice() };
        assert_eq!(keyed.validate(), vec![]);
        assert_eq!(keyed.check_instance_input(true), None);
        assert!(keyed.check_instance_input(false).unwrap().to_string().contains("required `id` field"));
        assert_eq!(invoice().check_instance_input(false), None);
        for bad in ["", "1st", "invoice id", "a-b"] {
            let m = MachineSpec { key: Some(bad.into()), ..invoice() };
            assert!(matches!(&m.validate()[..], [MachineError::InvalidKey { .. }]), "{bad:?}");
        }
        let unkeyed_tenant = MachineSpec { tenant_scoped: true, ..invoice() };
        assert!(matches!(&unkeyed_tenant.validate()[..], [MachineError::TenantScopeWithoutKey { .. }]));
        let unkeyed_mint = MachineSpec { mint: Some("INV-{n}".into()), ..invoice() };
        assert!(matches!(&unkeyed_mint.validate()[..], [MachineError::MintWithoutKey { .. }]));
        for bad in ["INV-", "INV-{n}-{n}", "INV-{m}-{n}"] {
            let m = MachineSpec { key: Some("id".into()), mint: Some(bad.into()), ..invoice() };
            assert!(matches!(&m.validate()[..], [MachineError::InvalidMint { .. }]), "{bad}");
        }
        let unkeyed_owner = MachineSpec { principal_owned: true, ..invoice() };
        assert!(matches!(&unkeyed_owner.validate()[..], [MachineError::OwnerWithoutKey { .. }]));
        for (format, mint) in [("INV-{n}", Mint::Counter), ("Q-{random}", Mint::Random), ("{random}", Mint::Random)] {
            assert_eq!(Mint::parse(format), Some(mint), "{format}");
        }
        for bad in ["Q-{random}-{n}", "Q-{random}{random}", "Q-{rand}", "Q-{random}}"] {
            assert_eq!(Mint::parse(bad), None, "{bad}");
        }
        let minted = MachineSpec { key: Some("id".into()), mint: Some("INV-{n}".into()), ..invoice() };
        assert_eq!(minted.validate(), vec![]);
    }

    #[test]
    fn bindings_are_checked_against_states_and_events() {
        let m = invoice();
        assert_eq!(m.check_binding(&["approved"], Some("DISCHARGE")), vec![]);
        assert_eq!(m.check_binding(&["review", "approved"], None), vec![]);
        assert_eq!(
            m.check_binding(&["aproved"], None)[0].to_string(),
            "machine `invoice` has no state `aproved`; valid states: draft, review, approved, discharged"
        );
        assert_eq!(
            m.check_binding(&["approved"], Some("DISCHARG"))[0].to_string(),
            "machine `invoice` has no event `DISCHARG`; valid events: APPROVE, DISCHARGE, REJECT, SUBMIT"
        );
        assert_eq!(
            m.check_binding(&["review", "draft"], Some("APPROVE")),
            vec![BindingError::EventNotAccepted {
                machine: "invoice".into(),
                state: "draft".into(),
                event: "APPROVE".into(),
                accepted: "SUBMIT".into(),
            }]
        );
        assert!(matches!(
            &m.check_binding(&["discharged"], Some("DISCHARGE"))[..],
            [BindingError::EventNotAccepted { accepted, .. }] if accepted == "none"
        ));
    }
}

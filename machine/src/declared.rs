//! The binding rules again, as `const fn`s over `&'static` data, so that rustc's const
//! evaluation can run them where an `#[action]` is compiled.
//!
//! `machine!` turns its declaration into a [`DeclaredMachine`]; `#[action]` looks it up
//! by id (through a trait implementation, which any module of the crate sees) and checks
//! each of its literals in a `const` spanned at that literal. A failed check panics with
//! the same message as [`BindingError`](crate::BindingError)'s, which rustc reports as
//! "evaluation panicked: …" with that message, at the literal.

/// A machine as `machine!` declares it, for the compile-time checks of its actions.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredMachine {
    /// The machine's id.
    pub id: &'static str,
    /// The argument naming an instance, for a keyed machine.
    pub key: Option<&'static str>,
    /// The states in declaration order.
    pub states: &'static [DeclaredState],
    /// `false` for a declaration with errors (already reported): its actions are not
    /// checked against it, so one mistake gives one error.
    pub checked: bool,
}

/// One state of a [`DeclaredMachine`].
#[derive(Debug, Clone, Copy)]
pub struct DeclaredState {
    /// The state's name.
    pub name: &'static str,
    /// Its transitions, `(event, target)`.
    pub on: &'static [(&'static str, &'static str)],
}

/// A message built at compile time, for a const panic. Long lists are cut with `…`.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    bytes: [u8; Message::CAPACITY],
    len: usize,
    full: bool,
}

impl Message {
    const CAPACITY: usize = 2048;

    const fn new() -> Self {
        Self { bytes: [0; Self::CAPACITY], len: 0, full: false }
    }

    /// Appends `text` whole, or `…` once when it does not fit.
    const fn push(&mut self, text: &str) {
        let text = text.as_bytes();
        if self.full {
            return;
        }
        if self.len + text.len() + 3 > Self::CAPACITY {
            self.full = true;
            text_into(&mut self.bytes, &mut self.len, "…".as_bytes());
            return;
        }
        text_into(&mut self.bytes, &mut self.len, text);
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "(a message that is not UTF-8)",
        }
    }
}

const fn text_into(bytes: &mut [u8], len: &mut usize, text: &[u8]) {
    let mut i = 0;
    while i < text.len() {
        bytes[*len] = text[i];
        *len += 1;
        i += 1;
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Byte-wise `a < b`, as `str`'s `Ord` (and so the runtime's sorted lists) orders them.
const fn less(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

impl DeclaredMachine {
    const fn state(&self, name: &str) -> Option<&DeclaredState> {
        let mut i = 0;
        while i < self.states.len() {
            if eq(self.states[i].name, name) {
                return Some(&self.states[i]);
            }
            i += 1;
        }
        None
    }

    const fn has_event(&self, event: &str) -> bool {
        let mut i = 0;
        while i < self.states.len() {
            if self.states[i].accepts(event) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// The smallest event greater than `after` (the smallest of all for `None`).
    const fn next_event(&self, after: Option<&'static str>) -> Option<&'static str> {
        let mut best: Option<&'static str> = None;
        let mut i = 0;
        while i < self.states.len() {
            let on = self.states[i].on;
            let mut j = 0;
            while j < on.len() {
                let event = on[j].0;
                let later = match after {
                    Some(after) => less(after, event),
                    None => true,
                };
                let better = match best {
                    Some(best) => less(event, best),
                    None => true,
                };
                if later && better {
                    best = Some(event);
                }
                j += 1;
            }
            i += 1;
        }
        best
    }

    /// Whether this is the machine `id`.
    pub const fn is(&self, id: &str) -> bool {
        eq(self.id, id)
    }

    /// A machine no check is made against (one not declared, already reported).
    pub const fn unchecked(id: &'static str) -> Self {
        Self { id, key: None, states: &[], checked: false }
    }

    /// What an action bound to `id` is told when no `machine!` of its crate declares it.
    pub const fn undeclared(id: &str) -> Message {
        let mut m = Message::new();
        m.push("no machine `");
        m.push(id);
        m.push("` is declared in this crate. An action is gated by its domain's machine unless it names another: ");
        m.push("if its states belong to a machine with another id, name it with `machine = \"…\"` in `#[action(…)]`; ");
        m.push("else declare it with `toolgate::machine! { id: \"");
        m.push(id);
        m.push("\", … }` in any module of this crate, or mark the action `startup_checked` if the machine is loaded at start-up");
        m
    }

    /// `machine `{id}` has no state `{state}`; valid states: …`, or `None` if it has.
    pub const fn check_state(&self, state: &str) -> Option<Message> {
        if !self.checked || self.state(state).is_some() {
            return None;
        }
        let mut m = Message::new();
        m.push("machine `");
        m.push(self.id);
        m.push("` has no state `");
        m.push(state);
        m.push("`; valid states: ");
        let mut i = 0;
        while i < self.states.len() {
            if i > 0 {
                m.push(", ");
            }
            m.push(self.states[i].name);
            i += 1;
        }
        Some(m)
    }

    /// `machine `{id}` has no event `{event}`; valid events: …` (sorted), or `None`.
    pub const fn check_event(&self, event: &str) -> Option<Message> {
        if !self.checked || self.has_event(event) {
            return None;
        }
        let mut m = Message::new();
        m.push("machine `");
        m.push(self.id);
        m.push("` has no event `");
        m.push(event);
        m.push("`; valid events: ");
        let mut next = self.next_event(None);
        let mut first = true;
        while let Some(name) = next {
            if !first {
                m.push(", ");
            }
            m.push(name);
            first = false;
            next = self.next_event(Some(name));
        }
        Some(m)
    }

    /// `machine `{id}`: state `{state}` does not accept event `{event}`; it accepts: …`,
    /// or `None` when it does, or when the state or the event is unknown (reported on
    /// their own).
    pub const fn check_accepts(&self, state: &str, event: &str) -> Option<Message> {
        if !self.checked || !self.has_event(event) {
            return None;
        }
        let Some(state) = self.state(state) else { return None };
        if state.accepts(event) {
            return None;
        }
        let mut m = Message::new();
        m.push("machine `");
        m.push(self.id);
        m.push("`: state `");
        m.push(state.name);
        m.push("` does not accept event `");
        m.push(event);
        m.push("`; it accepts: ");
        if state.on.is_empty() {
            m.push("none");
        }
        let mut i = 0;
        while i < state.on.len() {
            if i > 0 {
                m.push(", ");
            }
            m.push(state.on[i].0);
            i += 1;
        }
        Some(m)
    }

    /// A keyed machine's action must take an input (which names the instance).
    pub const fn check_input(&self, takes_input: bool) -> Option<Message> {
        let Some(key) = self.key else { return None };
        if !self.checked || takes_input {
            return None;
        }
        let mut m = Message::new();
        m.push("machine `");
        m.push(self.id);
        m.push("` has one instance per `");
        m.push(key);
        m.push("`, so its actions must take an input with a required `");
        m.push(key);
        m.push("` field (a string or an integer); the handler takes no input");
        Some(m)
    }
}

impl DeclaredState {
    const fn accepts(&self, event: &str) -> bool {
        let mut i = 0;
        while i < self.on.len() {
            if eq(self.on[i].0, event) {
                return true;
            }
            i += 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BindingError, MachineSpec, StateSpec, Transition};

    const INVOICE: DeclaredMachine = DeclaredMachine {
        id: "invoice",
        key: Some("id"),
        states: &[
            DeclaredState { name: "draft", on: &[("SUBMIT", "review")] },
            DeclaredState { name: "review", on: &[("APPROVE", "approved"), ("REJECT", "draft")] },
            DeclaredState { name: "approved", on: &[("DISCHARGE", "discharged")] },
            DeclaredState { name: "discharged", on: &[] },
        ],
        checked: true,
    };

    fn spec() -> MachineSpec {
        MachineSpec {
            id: INVOICE.id.into(),
            initial: Some("draft".into()),
            key: INVOICE.key.map(Into::into),
            tenant_scoped: false,
            principal_owned: false,
            mint: None,
            states: INVOICE
                .states
                .iter()
                .map(|s| StateSpec {
                    name: s.name.into(),
                    is_final: s.on.is_empty(),
                    on: s.on.iter().map(|(e, t)| Transition::new(*e, *t)).collect(),
                    after: vec![],
                    entry: vec![],
                    exit: vec![],
                })
                .collect(),
        }
    }

    fn text(message: Option<Message>) -> Option<String> {
        message.map(|m| m.as_str().to_string())
    }

    /// The compile-time messages are the start-up ones, word for word.
    #[test]
    fn const_checks_say_what_the_runtime_checks_say() {
        let spec = spec();
        let runtime = |states: &[&str], event: Option<&str>| -> Vec<String> {
            spec.check_binding(states, event).iter().map(BindingError::to_string).collect()
        };
        assert_eq!(text(INVOICE.check_state("aproved")), runtime(&["aproved"], None).first().cloned());
        assert_eq!(text(INVOICE.check_state("approved")), None);
        assert_eq!(text(INVOICE.check_event("DISCHARG")), runtime(&["approved"], Some("DISCHARG")).first().cloned());
        assert_eq!(
            text(INVOICE.check_accepts("draft", "APPROVE")),
            runtime(&["draft"], Some("APPROVE")).first().cloned()
        );
        assert_eq!(
            text(INVOICE.check_accepts("discharged", "DISCHARGE")),
            runtime(&["discharged"], Some("DISCHARGE")).first().cloned()
        );
        assert_eq!(text(INVOICE.check_accepts("nowhere", "APPROVE")), None);
        assert_eq!(text(INVOICE.check_input(false)), spec.check_instance_input(false).map(|e| e.to_string()));
        assert_eq!(text(INVOICE.check_input(true)), None);
    }

    #[test]
    fn an_unchecked_machine_accepts_everything() {
        let unchecked = DeclaredMachine { checked: false, ..INVOICE };
        assert!(unchecked.check_state("x").is_none() && unchecked.check_event("X").is_none());
        assert!(unchecked.check_input(false).is_none());
    }

    #[test]
    fn long_messages_are_cut() {
        let mut m = Message::new();
        for _ in 0..1000 {
            m.push("state, ");
        }
        assert!(m.as_str().ends_with('…') && m.as_str().len() <= Message::CAPACITY);
    }
}

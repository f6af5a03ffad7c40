//! A tool's description as the model reads it: the handler's doc comment, when a bound
//! tool is callable and what it moves its machine to, its rate limit, what it is not for.

use crate::action::ActionRegistration;
use crate::fsm::Machine;

/// The doc comment, then when the tool is callable (bound tools), its rate limit (`scope`:
/// what the limit counts per), then what it is not for.
pub(super) fn description(
    registration: &ActionRegistration,
    bound_machine: Option<&Machine>,
    scope: Option<&str>,
) -> String {
    let mut description = registration.description.to_string();
    if let Some(machine) = bound_machine {
        description.push_str("\n\n");
        description.push_str(&precondition(machine, registration.bind_states, registration.transition));
    }
    if let (Some(limit), Some(scope)) = (registration.rate_limit, scope) {
        description.push_str(&format!("\n\nAt most {} {scope}.", limit.in_words()));
    }
    if let Some(not_for) = registration.not_for {
        description.push_str(&format!("\n\nNot for: {}.", not_for.trim_end_matches('.')));
    }
    description
}

/// When a bound tool is callable, in words, for its description: where the listing
/// cannot show it (sessionless clients, keyed instances other than the focus), the model
/// still reads it.
fn precondition(machine: &Machine, bind_states: &[&str], transition: Option<&str>) -> String {
    // Short: every listed tool pays for these words on every turn.
    let subject = match machine.key() {
        Some(_) => format!("the `{}`", machine.id()),
        None => format!("this conversation's `{}`", machine.id()),
    };
    let mut text = format!("Only while {subject} is {}", either(bind_states));
    if let Some(event) = transition {
        let mut targets: Vec<&str> = Vec::new();
        let branches = bind_states.iter().flat_map(|from| machine.spec().branches(from, event));
        for to in branches.map(|t| t.target.as_str()) {
            if !targets.contains(&to) {
                targets.push(to);
            }
        }
        text.push_str(&format!("; moves it to {}", either(&targets)));
    }
    // What time does to it: "`quoted` lasts 15 minutes, then it is `expired`".
    for state in bind_states {
        if let Some(delayed) = machine.spec().first_delayed(state) {
            let lasts = toolgate_machine::grammar::duration_in_words(delayed.after_ms);
            text.push_str(&format!("; after {lasts} `{state}` becomes `{}`", delayed.target));
        }
    }
    text.push('.');
    text
}

/// "`a`", "`a` or `b`", "`a`, `b` or `c`".
fn either(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{MachineSpec, StateSpec, Transition};

    fn state(name: &str, on: &[(&str, &str)]) -> StateSpec {
        StateSpec {
            name: name.into(),
            is_final: on.is_empty(),
            on: on.iter().map(|(e, t)| Transition::new(*e, *t)).collect(),
            after: vec![],
            entry: vec![],
            exit: vec![],
        }
    }

    #[test]
    fn a_precondition_names_each_target_state_once() {
        let machine = Machine::new(MachineSpec {
            id: "order".into(),
            initial: Some("new".into()),
            key: None,
            tenant_scoped: false,
            principal_owned: false,
            mint: None,
            states: vec![
                state("new", &[("PAY", "paid"), ("HOLD", "held")]),
                state("held", &[("PAY", "review"), ("RELEASE", "late")]),
                state("late", &[("PAY", "paid")]),
                state("review", &[("ACCEPT", "paid")]),
                state("paid", &[]),
            ],
        })
        .expect("a valid machine");
        let text = precondition(&machine, &["new", "held", "late"], Some("PAY"));
        assert!(text.contains("moves it to `paid` or `review`."), "{text}");
    }
}

//! The transactional hooks `ServerBuilder::on_entry` and `on_exit` give machines' states,
//! each checked against its machine.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::StartupProblem;
use crate::fsm::Machine;
use crate::hook::{HookPoint, HookRegistration, Hooks};

/// The hooks `registrations` give `machines`; one that names no machine, no state of its
/// machine, or a machine without keyed instances, is a problem.
pub(super) fn checked(
    machines: &BTreeMap<String, Arc<Machine>>,
    registrations: &[HookRegistration],
    problems: &mut Vec<StartupProblem>,
) -> Hooks {
    let mut hooks = Hooks::default();
    for registration in registrations {
        let (id, hook) = (&registration.machine, &registration.hook);
        let given = match hook.point {
            HookPoint::Entry => format!("on_entry(\"{id}\", \"{}\", …)", hook.state),
            HookPoint::Exit => format!("on_exit(\"{id}\", \"{}\", …)", hook.state),
        };
        let problem = match machines.get(id) {
            None => Some(format!(
                "there is no such machine; machines: {}",
                machines.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(machine) if !machine.has_state(&hook.state) => Some(format!(
                "machine `{id}` has no such state; its states: {}",
                machine.spec().states.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            )),
            Some(machine) if machine.key().is_none() => Some(
                "the machine's instances are conversations, not rows of yours: a hook runs on a keyed machine's instances"
                    .to_string(),
            ),
            Some(_) => None,
        };
        match problem {
            Some(problem) => problems.push(StartupProblem::Hook { given, problem }),
            None => hooks.add(id, hook.clone()),
        }
    }
    hooks
}

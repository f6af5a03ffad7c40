//! How long states last in place of what their machines declare (`--after`,
//! `ServerBuilder::after`), applied to the declared machines before they are checked.

use super::StartupProblem;
use crate::fsm::MachineSpec;

/// How long a state lasts before time moves it, in place of what its machine declares
/// (`--after [MACHINE.]STATE=DURATION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DelayOverride {
    /// The machine, or every machine with such a state.
    pub(crate) machine: Option<String>,
    pub(crate) state: String,
    pub(crate) after_ms: u64,
}

/// Applies `delays` to `specs`' first `after` of each state named; one that names no
/// such state is a problem.
pub(super) fn apply_delays(
    specs: &mut [&mut MachineSpec],
    delays: &[DelayOverride],
    problems: &mut Vec<StartupProblem>,
) {
    for delay in delays {
        let mut applied = false;
        let named = specs.iter_mut().filter(|spec| delay.machine.as_ref().is_none_or(|id| *id == spec.id));
        for spec in named {
            let state = spec.states.iter_mut().find(|s| s.name == delay.state);
            // The first to fire is the shortest: the one that changes.
            if let Some(first) = state.and_then(|s| s.after.iter_mut().min_by_key(|d| d.after_ms)) {
                first.after_ms = delay.after_ms;
                applied = true;
            }
        }
        if !applied {
            let path = match &delay.machine {
                Some(machine) => format!("{machine}.{}", delay.state),
                None => delay.state.clone(),
            };
            problems.push(StartupProblem::Delay { path });
        }
    }
}

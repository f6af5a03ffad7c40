//! The tools that unlock a tool: from each state of its machine where it is not allowed,
//! the next step on a shortest way to a state where it is.

use std::collections::{HashMap, VecDeque};

use super::tool_entry::ToolEntry;
use crate::fsm::Machine;

impl ToolEntry {
    /// For each state of the tool's machine where the tool is not allowed, the tools
    /// callable there whose transition leads nearest to a state where it is: the next
    /// step on a shortest way, never a tool that cannot apply from that state.
    pub(crate) fn find_unlockers(&self, tools: &[ToolEntry]) -> HashMap<String, Vec<String>> {
        let (Some(machine), bound) = (&self.machine, self.bind_states()) else { return HashMap::new() };
        if bound.is_empty() {
            return HashMap::new();
        }
        let distance = distances_to(machine, bound);
        let same_machine: Vec<&ToolEntry> = tools
            .iter()
            .filter(|other| other.name != self.name)
            .filter(|other| other.machine.as_ref().is_some_and(|m| m.id() == machine.id()))
            .collect();
        let mut unlockers = HashMap::new();
        for state in machine.spec().states.iter().map(|s| s.name.as_str()).filter(|s| !bound.contains(s)) {
            let steps: Vec<(usize, &str)> = same_machine
                .iter()
                .filter(|other| other.bind_states().contains(&state))
                .filter_map(|other| {
                    let to = machine.target(state, other.transition()?)?;
                    Some((*distance.get(to)?, other.name))
                })
                .collect();
            let Some(nearest) = steps.iter().map(|(d, _)| *d).min() else { continue };
            let names = steps.iter().filter(|(d, _)| *d == nearest).map(|(_, name)| name.to_string()).collect();
            unlockers.insert(state.to_string(), names);
        }
        unlockers
    }
}

/// How many transitions each state is from the nearest of `targets` (absent: none is
/// reachable from it), by a breadth-first search over the transitions reversed.
fn distances_to<'m>(machine: &'m Machine, targets: &[&str]) -> HashMap<&'m str, usize> {
    let states = &machine.spec().states;
    let mut distance: HashMap<&str, usize> = HashMap::new();
    let mut queue = VecDeque::new();
    for state in states.iter().filter(|s| targets.contains(&s.name.as_str())) {
        distance.insert(&state.name, 0);
        queue.push_back(state.name.as_str());
    }
    while let Some(to) = queue.pop_front() {
        let next = distance[to] + 1;
        for from in states.iter().filter(|s| s.on.iter().any(|t| t.target == to)) {
            if !distance.contains_key(from.name.as_str()) {
                distance.insert(&from.name, next);
                queue.push_back(&from.name);
            }
        }
    }
    distance
}

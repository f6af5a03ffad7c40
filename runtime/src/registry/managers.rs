//! Who acts on an owned machine's instances besides their owners: the scopes
//! `ServerBuilder::owned_instances_managed_by` names, given to each machine once.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::StartupProblem;
use crate::fsm::Machine;

/// `machines`, each principal-owned one named in `managers` managed by its scopes; a name
/// that is no machine, or a machine whose instances are not their owners', is a problem.
pub(super) fn managed(
    mut machines: BTreeMap<String, Arc<Machine>>,
    managers: &BTreeMap<String, Vec<String>>,
    problems: &mut Vec<StartupProblem>,
) -> BTreeMap<String, Arc<Machine>> {
    for (id, scopes) in managers {
        let problem = match machines.get(id) {
            None => Some(format!(
                "there is no such machine; machines: {}",
                machines.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(machine) if !machine.is_principal_owned() => Some(
                "its instances are not their owners' (`owner: principal`): every caller allowed acts on them already"
                    .to_string(),
            ),
            Some(_) if scopes.is_empty() => Some("no scope is named".to_string()),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            problems.push(StartupProblem::Managers { machine: id.clone(), problem });
            continue;
        }
        if let Some(machine) = machines.get_mut(id) {
            *machine = Arc::new(Machine::clone(machine).managed_by(scopes));
        }
    }
    machines
}

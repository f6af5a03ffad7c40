//! [`TaskLog`]: the tasks this process started lately, by tenant — the index the console's
//! tasks page reads; each task's status, times and result are read from its record in the
//! store, which every replica updates.
//!
//! Kept in memory, per process, like the refusals: listing a tenant's tasks from the store
//! would read every task record. With replicas, each replica's console lists the tasks it
//! started (and shows each one's status as the store has it, whichever replica ran it).

use std::collections::VecDeque;
use std::sync::Mutex;

/// How many tasks are remembered: the newest, from every tenant.
const KEPT: usize = 1_024;

/// One task started by this process: its id, whose tenant's it is (`""`: a caller
/// without one), and who called (`None`: a caller that did not authenticate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartedTask {
    pub(crate) id: String,
    pub(crate) tenant: String,
    pub(crate) principal: Option<String>,
}

/// The tasks started lately ([module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct TaskLog {
    started: Mutex<VecDeque<StartedTask>>,
}

impl TaskLog {
    /// Remembers that task `id` started for `principal`, forgetting the oldest past [`KEPT`].
    pub(crate) fn record(&self, id: &str, principal: Option<&crate::auth::Principal>) {
        let tenant = principal.and_then(crate::auth::Principal::tenant).unwrap_or_default().to_string();
        let task = StartedTask { id: id.to_string(), tenant, principal: principal.map(|p| p.subject().to_string()) };
        let mut started = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if started.len() == KEPT {
            started.pop_front();
        }
        started.push_back(task);
    }

    /// `tenant`'s tasks (`""`: those of callers without a tenant), newest first, at most
    /// `most`.
    pub(crate) fn of(&self, tenant: &str, most: usize) -> Vec<StartedTask> {
        let started = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        started.iter().rev().filter(|task| task.tenant == tenant).take(most).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;

    #[test]
    fn a_tenants_tasks_come_newest_first_and_the_oldest_are_forgotten() {
        let log = TaskLog::default();
        let acme = Principal::new("ann").with_tenant("acme");
        log.record("t0", Some(&acme));
        log.record("t1", Some(&Principal::new("gus").with_tenant("globex")));
        log.record("t2", Some(&acme));
        log.record("t3", None);
        let ids = |tasks: Vec<StartedTask>| tasks.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(log.of("acme", 10)), ["t2", "t0"]);
        assert_eq!(ids(log.of("acme", 1)), ["t2"]);
        assert_eq!(log.of("", 10)[0], StartedTask { id: "t3".into(), tenant: String::new(), principal: None });
        for n in 0..KEPT {
            log.record(&format!("g{n}"), Some(&Principal::new("gus").with_tenant("globex")));
        }
        assert!(log.of("acme", 10).is_empty(), "the oldest are forgotten past {KEPT}");
    }
}

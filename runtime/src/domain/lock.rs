//! The intent lock's rules: [`DomainPolicy`], and the [`IntentLock`] this server applies.

use std::collections::BTreeMap;

use crate::error::{DomainMismatch, DomainNotSelected, ToolError};
use crate::store::Snapshot;

/// The name of the generated tool, `switch_domain`, the one way out of the lock.
pub(crate) const SWITCH_DOMAIN: &str = "switch_domain";

/// When a flow's active domain is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DomainPolicy {
    /// A domain tool called before any domain is selected is refused with
    /// `DOMAIN_NOT_SELECTED`; the model must call `switch_domain` first.
    Strict,
    /// A conversation's first domain tool selects its domain; later calls into another
    /// domain are refused until `switch_domain`. A keyed call that carries no state
    /// handle and has no session (MCP 2026-07-28, sessionless) belongs to no
    /// conversation: it is judged on its instance alone, and starts none. The default.
    #[default]
    LockOnFirstUse,
    /// No active domain: any domain's tool may be called. The `domain` field each call
    /// declares must still match the tool's own domain.
    Off,
}

/// How this server applies the intent lock, fixed at start-up.
#[derive(Debug, Clone)]
pub(crate) struct IntentLock {
    pub(crate) policy: DomainPolicy,
    /// List only the active domain's tools (plus global ones) in `tools/list`.
    pub(crate) list_active_only: bool,
    /// Every domain some tool belongs to, with its description if one was given.
    pub(crate) domains: BTreeMap<String, Option<String>>,
}

impl IntentLock {
    /// Whether the server generates `switch_domain`: there is something to switch
    /// between, and a lock to switch.
    pub(crate) fn has_switch(&self) -> bool {
        self.uses_flow()
    }

    /// Whether the active domain lives in the flow: there are domains to choose between,
    /// and a lock to hold the choice.
    pub(crate) fn uses_flow(&self) -> bool {
        self.policy != DomainPolicy::Off && self.domains.len() > 1
    }

    /// The flow's active domain: the one it selected, else the only domain the server has.
    pub(crate) fn active<'a>(&'a self, snapshot: &'a Snapshot) -> Option<&'a str> {
        snapshot.active_domain.as_deref().or_else(|| match self.domains.len() {
            1 => self.domains.keys().next().map(String::as_str),
            _ => None,
        })
    }

    /// Whether a call outside any conversation (sessionless, without a handle) may run
    /// without one: the lock selects on first use, so a conversation it started would
    /// admit it anyway, and nothing is gained by starting one.
    pub(crate) fn admits_without_flow(&self) -> bool {
        self.policy != DomainPolicy::Strict
    }

    /// Whether the flow may call a tool of `domain` (`None`: a global tool) right now.
    pub(crate) fn admits(&self, domain: Option<&str>, snapshot: &Snapshot) -> bool {
        let Some(domain) = domain else { return true };
        match (self.policy, self.active(snapshot)) {
            (DomainPolicy::Off, _) => true,
            (_, Some(active)) => active == domain,
            (DomainPolicy::LockOnFirstUse, None) => true,
            (DomainPolicy::Strict, None) => false,
        }
    }

    /// Whether `tools/list` shows a tool of `domain` to this flow.
    pub(crate) fn lists(&self, domain: Option<&str>, snapshot: &Snapshot) -> bool {
        !self.list_active_only || self.admits(domain, snapshot)
    }

    /// Checks a call to `tool` of `tool_domain` that declared `declared`. Returns the
    /// domain the call selects (lock on first use), if any.
    pub(crate) fn check_call(
        &self,
        tool: &str,
        tool_domain: &str,
        declared: &str,
        snapshot: &Snapshot,
    ) -> Result<Option<String>, ToolError> {
        let active = self.active(snapshot);
        let mismatch = |active_domain: Option<&str>| {
            ToolError::domain_mismatch(DomainMismatch {
                tool: tool.to_string(),
                active_domain: active_domain.map(str::to_string),
                tool_domain: tool_domain.to_string(),
                declared_domain: declared.to_string(),
                hint: self.mismatch_hint(tool, tool_domain, declared, active_domain),
            })
        };
        if declared != tool_domain {
            return Err(mismatch(active.filter(|_| self.policy != DomainPolicy::Off)));
        }
        match (self.policy, active) {
            (DomainPolicy::Off, _) => Ok(None),
            (_, Some(active)) if active == tool_domain => Ok(None),
            (_, Some(active)) => Err(mismatch(Some(active))),
            (DomainPolicy::LockOnFirstUse, None) => Ok(Some(tool_domain.to_string())),
            (DomainPolicy::Strict, None) => Err(ToolError::domain_not_selected(DomainNotSelected {
                tool: tool.to_string(),
                tool_domain: tool_domain.to_string(),
                hint: format!(
                    "no domain is active yet: call `{}` with {{\"domain\": \"{tool_domain}\", \"reason\": \"<what the user asked for>\"}} first, then call `{tool}` again",
                    SWITCH_DOMAIN
                ),
            })),
        }
    }

    fn mismatch_hint(&self, tool: &str, tool_domain: &str, declared: &str, active: Option<&str>) -> String {
        if declared != tool_domain {
            return format!(
                "`{tool}` belongs to domain `{tool_domain}` but the call declared `{declared}`: pick the tool of the domain you mean, and send `\"domain\": \"{tool_domain}\"` only with `{tool_domain}_*` tools"
            );
        }
        let active = active.unwrap_or_default();
        format!(
            "the active domain is `{active}`. Only if the user changed intent to `{tool_domain}`, call `{}` with {{\"domain\": \"{tool_domain}\", \"reason\": \"<what the user asked for>\"}}, then call `{tool}` again; otherwise use a `{active}_*` tool",
            SWITCH_DOMAIN
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(policy: DomainPolicy, domains: &[&str]) -> IntentLock {
        IntentLock { policy, list_active_only: false, domains: domains.iter().map(|d| (d.to_string(), None)).collect() }
    }

    fn active(domain: &str) -> Snapshot {
        Snapshot { active_domain: Some(domain.into()), ..Snapshot::default() }
    }

    #[test]
    fn strict_refuses_until_a_domain_is_selected() {
        let lock = lock(DomainPolicy::Strict, &["bus", "flight"]);
        let error = lock.check_call("bus_search", "bus", "bus", &Snapshot::default()).unwrap_err();
        assert_eq!(error.code(), "DOMAIN_NOT_SELECTED");
        assert!(error.to_structured()["hint"].as_str().unwrap().contains("switch_domain"));
        assert_eq!(lock.check_call("bus_search", "bus", "bus", &active("bus")), Ok(None));
        let error = lock.check_call("flight_search", "flight", "flight", &active("bus")).unwrap_err();
        let value = error.to_structured();
        assert_eq!((value["code"].as_str(), value["active_domain"].as_str()), (Some("DOMAIN_MISMATCH"), Some("bus")));
        assert!(value["hint"].as_str().unwrap().contains(r#"{"domain": "flight""#), "{value}");
    }

    #[test]
    fn a_declared_domain_must_match_the_tool() {
        let lock = lock(DomainPolicy::Off, &["bus", "flight"]);
        let value = lock.check_call("bus_search", "bus", "flight", &Snapshot::default()).unwrap_err().to_structured();
        assert_eq!(value["declared_domain"], "flight");
        assert_eq!(value["tool_domain"], "bus");
        assert_eq!(lock.check_call("flight_search", "flight", "flight", &active("bus")), Ok(None));
    }

    #[test]
    fn lock_on_first_use_selects_the_first_domain() {
        let lock = lock(DomainPolicy::LockOnFirstUse, &["bus", "flight"]);
        assert_eq!(lock.check_call("bus_search", "bus", "bus", &Snapshot::default()), Ok(Some("bus".into())));
        assert!(lock.check_call("flight_search", "flight", "flight", &active("bus")).is_err());
    }

    #[test]
    fn a_single_domain_is_always_active() {
        let lock = lock(DomainPolicy::Strict, &["invoice"]);
        assert_eq!(lock.active(&Snapshot::default()), Some("invoice"));
        assert!(!lock.has_switch());
        assert_eq!(lock.check_call("invoice_view", "invoice", "invoice", &Snapshot::default()), Ok(None));
    }
}

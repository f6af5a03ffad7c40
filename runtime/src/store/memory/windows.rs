//! Rate-limit windows kept in a store's memory: for each window, the calls admitted in
//! the last period (a sliding-window log), each named by a ticket that gives it back.

use std::collections::HashMap;

/// Forget idle windows once every this many admissions, so the table stays bounded.
const SWEEP_EVERY: u64 = 4096;

/// The windows of one store.
#[derive(Debug, Default)]
pub(super) struct WindowLog {
    /// Per window, the admitted calls still in it: when each leaves it, and its ticket.
    windows: HashMap<String, Vec<(u64, String)>>,
    admitted: u64,
}

impl WindowLog {
    /// Admits one call of `calls` per `per_ms` under `window` at `now_ms` and names it by
    /// the ticket returned, or says how many milliseconds until the oldest admitted call
    /// leaves the window.
    pub(super) fn spend(&mut self, window: &str, calls: u32, per_ms: u64, now_ms: u64) -> Result<String, u64> {
        self.admitted += 1;
        if self.admitted.is_multiple_of(SWEEP_EVERY) {
            self.windows.retain(|_, admitted| admitted.iter().any(|&(until, _)| until > now_ms));
        }
        let admitted = match self.windows.get_mut(window) {
            Some(admitted) => admitted,
            None => self.windows.entry(window.to_string()).or_default(),
        };
        admitted.retain(|&(until, _)| until > now_ms);
        if admitted.len() >= calls as usize {
            let leaves = admitted.iter().map(|&(until, _)| until).min().unwrap_or(now_ms);
            return Err(leaves.saturating_sub(now_ms).max(1));
        }
        let ticket = self.admitted.to_string();
        admitted.push((now_ms + per_ms.max(1), ticket.clone()));
        Ok(ticket)
    }

    /// Gives back the call admitted under `ticket`.
    pub(super) fn refund(&mut self, window: &str, ticket: &str) {
        if let Some(admitted) = self.windows.get_mut(window) {
            admitted.retain(|(_, t)| t != ticket);
            if admitted.is_empty() {
                self.windows.remove(window);
            }
        }
    }
}

//! Refusals past a cap are expected traffic under load or attack: each layer that refuses
//! past one logs it through a [`RefusalLog`], at most once per interval.

use std::time::Duration;

/// Refusals of one kind: logged at `warn` at most once per interval, with how many there
/// were since the last line.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    state: std::sync::Mutex<(u64, Option<std::time::Instant>)>,
}

/// The least time between two log lines about refusals of one kind.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

impl RefusalLog {
    /// Counts a refusal; logs `what` with the count when the interval has passed.
    pub(crate) fn refused(&self, what: &'static str) {
        self.refused_on("", what);
    }

    /// [`RefusalLog::refused`], naming the listener that refused (`listener` empty: none).
    pub(crate) fn refused_on(&self, listener: &'static str, what: &'static str) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (count, last) = &mut *state;
        *count += 1;
        let now = std::time::Instant::now();
        if last.is_none_or(|last| now.duration_since(last) >= REFUSAL_LOG_INTERVAL) {
            if listener.is_empty() {
                tracing::warn!(refused = *count, "{what}");
            } else {
                tracing::warn!(refused = *count, listener, "{what}");
            }
            *count = 0;
            *last = Some(now);
        }
    }
}

//! The correlation id: one per call, on its `tool_call` span, and the one an error that
//! keeps its detail in the server's log (`INTERNAL`, `STORE_UNAVAILABLE`) shows the model,
//! so an operator finds the log lines of what the model saw.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The 48 bits an id has, written as 12 hex digits.
const MASK: u64 = (1 << 48) - 1;

tokio::task_local! {
    /// The id of the call the task is running.
    static CALL: CorrelationId;
}

/// A call's correlation id: 12 hex digits. `Copy`, and made without allocating: a call
/// that logs nothing and fails with nothing to hide never writes it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CorrelationId(u64);

impl CorrelationId {
    /// A new id: a count from a random start (one per process), scrambled by a bijection
    /// of 48 bits, so that no two ids of a process are equal (until 2^48 calls), and ids
    /// look unrelated from call to call and from replica to replica.
    pub(crate) fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static START: OnceLock<u64> = OnceLock::new();
        let start = *START.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
        let mut id = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) & MASK;
        // Odd multipliers and right shifts, each invertible modulo 2^48.
        for multiplier in [0x9E37_79B9_7F4B, 0xC2B2_AE3D_27D5] {
            id = id.wrapping_mul(multiplier) & MASK;
            id ^= id >> 23;
        }
        Self(id)
    }

    /// The id of the call this task runs ([`within`](Self::within)); outside a call (a
    /// sweep, an effect's worker), a fresh one.
    pub(crate) fn current() -> Self {
        CALL.try_with(|id| *id).unwrap_or_else(|_| Self::fresh())
    }

    /// `future`, run as the call with this id: what it builds with
    /// [`current`](Self::current) has this id. A task-local, set as each poll starts: no
    /// allocation.
    pub(crate) fn within<F: Future>(self, future: F) -> impl Future<Output = F::Output> {
        CALL.scope(self, future)
    }
}

impl std::fmt::Display for CorrelationId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:012x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_twelve_hex_digits_and_never_repeat() {
        let ids: std::collections::HashSet<String> = (0..100_000).map(|_| CorrelationId::fresh().to_string()).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(ids.iter().all(|id| id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[tokio::test]
    async fn within_a_call_the_current_id_is_the_calls() {
        let call = CorrelationId::fresh();
        let seen = call.within(async {
            tokio::task::yield_now().await;
            (CorrelationId::current(), CorrelationId::current())
        });
        assert_eq!(seen.await, (call, call));
        assert_ne!(CorrelationId::current(), call, "outside the call, a fresh id");
    }
}

//! [`AttemptSlots`]: how many effects' attempts a server runs at once.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many attempts of effects one server runs at once. An attempt mostly waits for its
/// destination (a payment processor, a mail service), so this is the concurrency a
/// destination back from an outage sees from each server, and what bounds the drain of a
/// backlog: at 50 ms an attempt, 8 at once drained 145 a second (`benches/scale`,
/// `backlog`; BENCHMARKS.md). Apart from the instances a sweep settles at once, so that
/// attempts held by a slow or hanging destination (up to `--effect-timeout`) do not hold
/// the timers back.
pub(crate) const ATTEMPTS_AT_ONCE: usize = 32;

/// The places of [`ATTEMPTS_AT_ONCE`]: a sweep claims an effect's attempt only with a
/// place free, and the attempt keeps it until its end is committed. An effect due while
/// every place is taken is left due, unclaimed, for a later sweep: a backlog waits in the
/// store, not in the process.
#[derive(Debug, Clone)]
pub(crate) struct AttemptSlots(Arc<Semaphore>);

impl AttemptSlots {
    /// A free place, kept until the permit drops; `None` if every place is taken.
    pub(crate) fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }

    /// Whether every place is taken.
    pub(crate) fn all_taken(&self) -> bool {
        self.0.available_permits() == 0
    }

    /// Waits until a place is free, without taking it.
    pub(crate) async fn one_free(&self) {
        // The places are never closed: `acquire` fails only on a closed semaphore.
        let _ = self.0.acquire().await;
    }
}

impl Default for AttemptSlots {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(ATTEMPTS_AT_ONCE)))
    }
}

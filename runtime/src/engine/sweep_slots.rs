//! [`SweepSlots`]: how many instances the engine's sweeps settle, and their effects'
//! attempts run, at once (`timers.rs` takes them, `effect::Outbox::dispatch` keeps them).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many instances the sweeps settle, and their effects' attempts run, at once: enough
/// that a store's group commit holds several of them (one sync for several), so that a
/// hundred thousand due at once are settled at about the pace of calls sent by many
/// clients, not one at a time; few enough that the calls served meanwhile keep most of
/// their share, and that a backlog of effects reaches its destination a bounded number at
/// a time. Measured on SQLite with 20,000 due at once (`benches/scale`, BENCHMARKS.md): 2
/// at once took 20.6 s, 8 took 11.4 s, 32 took 7.8 s, while the other calls' p99 went
/// from 12 to 18 to 37 ms.
pub(crate) const SWEEP_AT_ONCE: usize = 8;

/// The places of [`SWEEP_AT_ONCE`]: a sweep takes one before it settles an instance, and
/// the attempts of the effects it claimed there keep it until their end is committed, so
/// a backlog of effects slows the sweeps instead of piling up attempts.
#[derive(Debug, Clone)]
pub(crate) struct SweepSlots(Arc<Semaphore>);

impl SweepSlots {
    /// Waits for a place, kept until the permit drops; `None` once the places are closed.
    pub(crate) async fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }
}

impl Default for SweepSlots {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(SWEEP_AT_ONCE)))
    }
}

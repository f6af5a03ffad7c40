//! [`CallsFirst`]: background work (a sweep settling what time made due, an effect's
//! attempt recording its end) yields to the calls a server is serving. While any call is
//! in flight, at most [`BESIDE_CALLS`] pieces of background work run at once; while none
//! is, each kind runs as many as its own limit allows. A call that arrives finds at most
//! that many beside it once the work already started ends, so that a hundred thousand
//! timers due at once do not become the calls' latency; and background work always has
//! a lane, so a server never idle still fires its timers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::task::TaskTracker;

/// How many pieces of background work run at once while calls are in flight.
const BESIDE_CALLS: usize = 1;

/// How often background work waiting beside calls looks whether they ended (it is woken
/// at once when a piece of work ends).
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The gate background work passes: the calls in flight, and the background work
/// running.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallsFirst {
    calls: TaskTracker,
    running: Arc<Running>,
}

/// The background work running, and the wake-up of one waiting when a piece ends.
#[derive(Debug, Default)]
struct Running {
    count: AtomicUsize,
    ended: Notify,
}

impl CallsFirst {
    /// A gate over the calls `calls` counts.
    pub(crate) fn new(calls: TaskTracker) -> Self {
        Self { calls, running: Arc::default() }
    }

    /// Waits until one more piece of background work may run: at once while no call is
    /// in flight; while calls are, once fewer than [`BESIDE_CALLS`] run. The work counts
    /// as running until the returned lane drops.
    pub(crate) async fn lane(&self) -> Lane {
        let Running { count, ended } = &*self.running;
        loop {
            // Registered before the look, so that an end between the look and the wait
            // is not missed.
            let woken = ended.notified();
            let running = count.load(Ordering::Acquire);
            if (self.calls.is_empty() || running < BESIDE_CALLS)
                && count.compare_exchange(running, running + 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
            {
                return Lane(self.running.clone());
            }
            let _ = tokio::time::timeout(LOOK_EVERY, woken).await;
        }
    }
}

/// A piece of background work let through, counted until it drops.
#[derive(Debug)]
pub(crate) struct Lane(Arc<Running>);

impl Drop for Lane {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether another lane opens within 50 ms.
    async fn opens(gate: &CallsFirst) -> Option<Lane> {
        tokio::time::timeout(Duration::from_millis(50), gate.lane()).await.ok()
    }

    #[tokio::test(start_paused = true)]
    async fn beside_a_call_background_work_runs_one_at_a_time() {
        let calls = TaskTracker::new();
        let gate = CallsFirst::new(calls.clone());
        let mut alone = Vec::new();
        for _ in 0..8 {
            alone.push(opens(&gate).await.expect("with no call in flight, background work runs at once"));
        }
        drop(alone);

        let call = calls.token();
        let first = opens(&gate).await.expect("beside a call, one runs");
        assert!(opens(&gate).await.is_none(), "beside a call, a second waits");
        drop(first);
        let second = opens(&gate).await.expect("the first ended: the next runs");
        assert!(opens(&gate).await.is_none());
        drop(call);
        let third = opens(&gate).await.expect("the call ended: more run at once");
        drop((second, third));
        assert_eq!(gate.running.count.load(Ordering::Acquire), 0, "every lane counted until it dropped");
    }
}

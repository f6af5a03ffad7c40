//! Bounded waits that cost nothing when nothing has to wait.
//!
//! Arming a timer on tokio's multi-threaded runtime can wake the thread that drives
//! timers, on every call. Most of what a call bounds — a free lease, a handler that needs
//! no I/O — is ready at its first poll, so the timer is armed only after a first poll
//! finds the future pending.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

/// Polls `future` once, in the calling task: `Pending` leaves it registered to wake the
/// task, to be awaited on with whatever bounds it then needs.
pub(crate) async fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let mut future = future;
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// Awaits `future` for at most `limit`; `None` when the limit passed first.
pub(crate) async fn within<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    if let Poll::Ready(output) = poll_once(future.as_mut()).await {
        return Some(output);
    }
    tokio::time::timeout(limit, future).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn ready_futures_need_no_timer_and_pending_ones_are_bounded() {
        assert_eq!(within(Duration::ZERO, async { 7 }).await, Some(7));
        assert_eq!(within(Duration::from_secs(1), std::future::pending::<()>()).await, None);
        let slow = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            3
        };
        assert_eq!(within(Duration::from_secs(1), slow).await, Some(3));
    }
}

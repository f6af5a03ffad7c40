//! How a server stops: one shutdown for every listener of the process, in the order a load
//! balancer needs so that no call is cut.
//!
//! 1. **Draining** ([`Lifecycle::begin`], on SIGTERM or SIGINT, or the embedder's own
//!    future): `/readyz` fails at once, and every HTTP/1 response says `Connection: close`
//!    (an HTTP/2 connection is sent GOAWAY), while new requests are still served for the
//!    drain delay — the time load balancers take to stop sending here.
//! 2. **Closing**, once the delay has passed: listeners stop accepting, idle connections
//!    close, listening streams end (their clients reconnect elsewhere), and the calls in
//!    flight finish, up to the shutdown grace; then the stateful sessions close.
//! 3. **Stopping** what runs in the background: tasks finish within what is left of the
//!    grace, or give their instance and their record back at once; effects' attempts end;
//!    every lease is released and the store closed ([`Server::stop`]).
//!
//! A second signal exits at once.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long a stopping server keeps serving new requests by default, so that load
/// balancers see `/readyz` fail and stop sending before it stops accepting.
pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(5);

/// How long a stopping server waits, by default, for the calls and tasks in flight once
/// it stops accepting.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Where one server is in its life: serving, draining, or closing.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    draining: CancellationToken,
    closing: CancellationToken,
    /// The stateful sessions may close: the calls in flight ended, or the grace ran out.
    calls_ended: CancellationToken,
    pub(crate) drain_delay: Duration,
    pub(crate) grace: Duration,
    /// When the grace runs out, once closing began.
    deadline: std::sync::OnceLock<Instant>,
}

impl Lifecycle {
    pub(crate) fn new(drain_delay: Duration, grace: Duration) -> Self {
        Self {
            draining: CancellationToken::new(),
            closing: CancellationToken::new(),
            calls_ended: CancellationToken::new(),
            drain_delay,
            grace,
            deadline: std::sync::OnceLock::new(),
        }
    }

    /// Begins the shutdown, once (later calls change nothing): draining now, closing
    /// after the drain delay.
    pub(crate) fn begin(&self) {
        if self.draining.is_cancelled() {
            return;
        }
        self.draining.cancel();
        tracing::info!(
            drain_delay_ms = self.drain_delay.as_millis() as u64,
            "shutting down: not ready from now on; serving new requests until the drain delay passes"
        );
        let (closing, delay) = (self.closing.clone(), self.drain_delay);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(delay).await;
                    closing.cancel();
                });
            }
            Err(_) => closing.cancel(),
        }
    }

    /// Whether the shutdown began: readiness fails, responses say `Connection: close`.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// Completes when the shutdown begins.
    pub(crate) fn draining(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.draining.cancelled()
    }

    /// Completes once the drain delay has passed: stop accepting.
    pub(crate) async fn closing(&self) {
        self.closing.cancelled().await;
        self.deadline();
    }

    /// Completes once the drain delay has passed, as [`Lifecycle::closing`] does, owning
    /// what it waits on: for a response body, which outlives any borrow of the server.
    pub(crate) fn closing_owned(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.closing.clone().cancelled_owned()
    }

    /// When the shutdown grace runs out (counted from the first time it is asked, at
    /// closing).
    pub(crate) fn deadline(&self) -> Instant {
        *self.deadline.get_or_init(|| Instant::now() + self.grace)
    }

    /// The calls in flight ended (or the grace ran out): stateful sessions may close.
    pub(crate) fn let_sessions_close(&self) {
        self.calls_ended.cancel();
    }

    /// Completes once the calls in flight ended at closing.
    pub(crate) fn sessions_may_close(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.calls_ended.cancelled()
    }
}

/// Completes on the first SIGTERM or SIGINT (Ctrl-C); from then on, the next of either
/// ends the process at once. The handlers are installed when it is called, not when it is
/// first polled, so a signal that arrives while the server starts is not lost (or fatal).
/// (Where signals cannot be watched, it never completes.)
pub fn terminate_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = signal(SignalKind::terminate()).and_then(|term| Ok((term, signal(SignalKind::interrupt())?)));
        async move {
            let Ok((mut term, mut int)) = handlers else { return std::future::pending().await };
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "asked to stop; a second signal ends the process at once");
            tokio::spawn(async move {
                let code = tokio::select! {
                    _ = term.recv() => 128 + 15,
                    _ = int.recv() => 128 + 2,
                };
                tracing::warn!("asked to stop again: exiting at once");
                std::process::exit(code);
            });
        }
    }
    #[cfg(not(unix))]
    {
        async {
            if tokio::signal::ctrl_c().await.is_err() {
                return std::future::pending().await;
            }
            tokio::spawn(async {
                let _ = tokio::signal::ctrl_c().await;
                std::process::exit(130);
            });
        }
    }
}

//! Accepting HTTP connections with limits a client cannot hold open: a connection's
//! first request must arrive within the read timeout counted from accept (a connection
//! that sends nothing, or a few bytes of it, is closed), later requests' headers within it
//! too (hyper closes the connection otherwise, also when it idles between requests), and
//! one peer address holds at most so many connections at once. Without them, connections that send a request line and never
//! finish (slowloris) are held forever, until the descriptors run out and no one can
//! connect.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tower::ServiceExt;

use super::refusal_log::RefusalLog;

/// How long a shutdown waits for open connections (listening streams among them) to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The open connections of each peer address, capped.
#[derive(Debug)]
struct ConnectionCap {
    max_per_client: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
    refusals: RefusalLog,
    /// Connections closed for sending no request in time.
    silent: RefusalLog,
}

/// One accepted connection's place; freed when the connection ends.
struct ConnectionPlace {
    cap: Arc<ConnectionCap>,
    peer: IpAddr,
}

impl ConnectionCap {
    fn open(self: &Arc<Self>, peer: IpAddr) -> Option<ConnectionPlace> {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(peer).or_insert(0);
        if *count >= self.max_per_client {
            drop(open);
            self.refusals.refused("closed new connections from an address past its connection cap");
            return None;
        }
        *count += 1;
        Some(ConnectionPlace { cap: self.clone(), peer })
    }
}

impl Drop for ConnectionPlace {
    fn drop(&mut self) {
        let mut open = self.cap.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, each request carrying its
/// peer's [`axum::extract::ConnectInfo`], every connection with TCP_NODELAY (without it each
/// SSE reply waits ~40 ms on Nagle and delayed ACK), a header read timeout of
/// `read_timeout` and at most `max_per_client` connections from one address (a further
/// one is closed at once). On shutdown, open connections get a short grace period.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    read_timeout: Duration,
    max_per_client: usize,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cap = Arc::new(ConnectionCap {
        max_per_client,
        open: Mutex::default(),
        refusals: RefusalLog::default(),
        silent: RefusalLog::default(),
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(read_timeout);
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(read_timeout));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin.
                    tracing::debug!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(place) = cap.open(peer.ip()) else { continue };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        // The read timeout counts from accept: hyper's starts at a request's first byte,
        // and telling HTTP/1 from HTTP/2 waits for bytes with none.
        let first_request = Arc::new(tokio::sync::Notify::new());
        let arrived = first_request.clone();
        let service = router.clone().map_request(move |mut request: http::Request<hyper::body::Incoming>| {
            arrived.notify_one();
            request.extensions_mut().insert(axum::extract::ConnectInfo::<SocketAddr>(peer));
            request
        });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service).into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let ended = tokio::select! {
                ended = &mut connection => Some(ended),
                waited = tokio::time::timeout(read_timeout, first_request.notified()) => match waited {
                    Ok(()) => None,
                    Err(_) => {
                        place.cap.silent.refused("closed connections that sent no request within the read timeout");
                        return;
                    }
                },
            };
            let ended = match ended {
                Some(ended) => ended,
                None => connection.await,
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "a connection ended with an error");
            }
            drop(place);
        });
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
        tracing::debug!("closed connections still open after the shutdown grace period");
    }
    Ok(())
}

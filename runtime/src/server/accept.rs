//! Accepting HTTP connections, on every listener the process opens (the MCP endpoint, the
//! operator's console, the metrics), with limits a client cannot get around — each
//! listener with its own settings ([`Admission`]), all through this one accept path:
//!
//! - **a read timeout**: a connection's first request must arrive within it, counted from
//!   accept (a connection that sends nothing, or a few bytes, is closed), and so must later
//!   requests' headers (hyper closes a connection that idles between requests too);
//! - **a cap per peer address**, and **a cap on the listener's open connections in all**:
//!   past either, a new connection is closed as soon as it is accepted. The total cap is
//!   what keeps descriptors for the other listeners: however many connections reach the
//!   console from however many addresses, they never use the descriptors MCP calls need;
//! - **back-off when accepting fails** (out of descriptors, `EMFILE`): the loop waits,
//!   longer each time, rather than spin on an error that a retry cannot fix at once;
//! - **the `Host` check** ([`Hosts`]): a request whose `Host` is not one the listener
//!   answers to is refused before any handler runs (DNS-rebinding protection).
//!
//! Without them, connections that send a request line and never finish (slowloris), or
//! just stay open, are held forever, until the descriptors run out and no one can connect.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::IntoResponse;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tower::ServiceExt;

use super::lifecycle::Lifecycle;
use super::refusal_log::RefusalLog;

/// The first wait after accepting failed; doubled at each failure in a row, up to
/// [`MOST_ACCEPT_BACKOFF`].
const FIRST_ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
const MOST_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// What answers `/healthz` and `/readyz` on a listener that has them, before the `Host`
/// check: the answer for a path, if it is a probe's (`server/probes.rs`).
pub(crate) type Probes =
    Arc<dyn Fn(&str) -> Option<futures_util::future::BoxFuture<'static, axum::response::Response>> + Send + Sync>;

/// What one listener admits.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    /// What the listener is, for log lines ("the console").
    pub(crate) name: &'static str,
    /// How long a connection may take to send its first request, and each request's headers.
    pub(crate) read_timeout: Duration,
    /// Open connections from one peer address.
    pub(crate) max_per_client: usize,
    /// Open connections in all.
    pub(crate) max_connections: usize,
    /// The `Host` headers the listener answers.
    pub(crate) hosts: Hosts,
}

/// The `Host` headers a listener answers; any other gets 403, a request without one 400
/// (rmcp's answers, so the MCP endpoint answers the same whichever layer refuses).
#[derive(Debug, Clone)]
pub(crate) enum Hosts {
    /// Only these (`localhost`, `app.example.com:443`); an empty list allows every host.
    Named(Vec<AllowedHost>),
    /// These, and also any IP address (`10.0.3.7:9090`) or no `Host` at all: what a
    /// scraper or an orchestrator's probe sends, which knows the pod by its address. A
    /// DNS-rebinding attack needs a name the attacker controls, so an address in `Host`
    /// cannot come from one.
    NamedOrAddress(Vec<AllowedHost>),
}

/// An allowed `Host` entry as rmcp reads one: a host name (lowercase, without brackets),
/// and the port it requires, if it names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    pub(crate) name: String,
    pub(crate) port: Option<u16>,
}

impl AllowedHost {
    /// `entry` as rmcp parses an `allowed_hosts` entry; `None` for an empty one.
    pub(crate) fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        let name = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
        match entry.parse::<http::uri::Authority>() {
            Ok(authority) => Some(Self { name: name(authority.host()), port: authority.port_u16() }),
            Err(_) => (!entry.is_empty()).then(|| Self { name: name(entry), port: None }),
        }
    }

    /// Every entry of `entries` that parses.
    pub(crate) fn all(entries: &[String]) -> Vec<Self> {
        entries.iter().filter_map(|entry| Self::parse(entry)).collect()
    }

    /// Whether a `Host` of `name` and `port` is this entry.
    pub(crate) fn admits(&self, name: &str, port: Option<u16>) -> bool {
        self.name.eq_ignore_ascii_case(name) && self.port.is_none_or(|p| port == Some(p))
    }
}

impl Hosts {
    /// Why a request with these headers is refused, if it is: its answer.
    fn refusal<B>(&self, request: &http::Request<B>) -> Option<axum::response::Response> {
        let (allowed, address_or_none) = match self {
            Self::Named(allowed) if allowed.is_empty() => return None,
            Self::Named(allowed) => (allowed, false),
            Self::NamedOrAddress(allowed) => (allowed, true),
        };
        let mut hosts = request.headers().get_all(http::header::HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(host), None) => host.to_str().ok().and_then(|host| host.parse::<http::uri::Authority>().ok()),
            (None, _) => request.uri().authority().cloned(),
            (Some(_), Some(_)) => None,
        };
        let Some(host) = host else {
            if address_or_none && !request.headers().contains_key(http::header::HOST) {
                return None;
            }
            let missing = !request.headers().contains_key(http::header::HOST);
            let body = if missing { "Bad Request: missing Host header" } else { "Bad Request: Invalid Host header" };
            return Some((http::StatusCode::BAD_REQUEST, body).into_response());
        };
        let name = host.host().trim_matches(['[', ']']);
        let port = host.port_u16();
        if allowed.iter().any(|entry| entry.admits(name, port)) || (address_or_none && name.parse::<IpAddr>().is_ok()) {
            return None;
        }
        Some((http::StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed").into_response())
    }
}

/// The open connections of one listener, capped per peer address and in all.
#[derive(Debug)]
struct ConnectionCap {
    admission: Admission,
    open: Mutex<OpenConnections>,
    refusals: RefusalLog,
    /// Connections closed for sending no request in time.
    silent: RefusalLog,
    /// Requests refused for their `Host`.
    hosts: RefusalLog,
}

#[derive(Debug, Default)]
struct OpenConnections {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// One accepted connection's place; freed when the connection ends.
struct ConnectionPlace {
    cap: Arc<ConnectionCap>,
    peer: IpAddr,
}

impl ConnectionCap {
    fn open(self: &Arc<Self>, peer: IpAddr) -> Option<ConnectionPlace> {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let OpenConnections { total, by_address } = &mut *open;
        let count = by_address.entry(peer).or_insert(0);
        let refused = if *total >= self.admission.max_connections {
            Some("closed new connections past the listener's cap on open connections")
        } else if *count >= self.admission.max_per_client {
            Some("closed new connections from an address past its connection cap")
        } else {
            None
        };
        if let Some(why) = refused {
            if *count == 0 {
                by_address.remove(&peer);
            }
            drop(open);
            self.refusals.refused_on(self.admission.name, why);
            return None;
        }
        *count += 1;
        *total += 1;
        Some(ConnectionPlace { cap: self.clone(), peer })
    }
}

impl Drop for ConnectionPlace {
    fn drop(&mut self) {
        let mut open = self.cap.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_address.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                open.by_address.remove(&self.peer);
            }
        }
    }
}

/// Whether an accept error is the process (or the system) out of descriptors: the one a
/// retry at once cannot fix.
fn out_of_descriptors(error: &std::io::Error) -> bool {
    // EMFILE (24) and ENFILE (23) on Linux and the BSDs.
    matches!(error.raw_os_error(), Some(23 | 24))
}

/// Serves `router` on `listener` as `admission` says until the server closes
/// ([`Lifecycle`]), each request carrying its peer's [`axum::extract::ConnectInfo`] and
/// every connection with TCP_NODELAY (without it each SSE reply waits ~40 ms on Nagle and
/// delayed ACK). `/healthz` and `/readyz` are answered first, by `probes` where given.
///
/// From the start of the drain every HTTP/1 response says `Connection: close`, and an
/// HTTP/2 connection is sent GOAWAY, so a load balancer never sends a request into a
/// connection the server is closing; idle connections are closed only once the drain delay
/// has passed. Then the listener stops accepting, and the connections still open get the
/// shutdown grace to end.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    admission: Admission,
    lifecycle: Arc<Lifecycle>,
    probes: Option<Probes>,
) -> std::io::Result<()> {
    let read_timeout = admission.read_timeout;
    let cap = Arc::new(ConnectionCap {
        admission,
        open: Mutex::default(),
        refusals: RefusalLog::default(),
        silent: RefusalLog::default(),
        hosts: RefusalLog::default(),
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(read_timeout);
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(read_timeout));
    let connections = tokio_util::task::TaskTracker::new();
    let mut backoff = FIRST_ACCEPT_BACKOFF;
    let out_of_descriptors_log = RefusalLog::default();
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    backoff = FIRST_ACCEPT_BACKOFF;
                    accepted
                }
                Err(error) => {
                    if out_of_descriptors(&error) {
                        out_of_descriptors_log.refused_on(cap.admission.name, "accepting connections failed: out of file descriptors; backing off");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MOST_ACCEPT_BACKOFF);
                    } else {
                        // A connection reset before it was accepted, say: the next may be fine.
                        tracing::debug!(%error, "accepting a connection failed");
                        tokio::time::sleep(FIRST_ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            },
            () = lifecycle.closing() => break,
        };
        let Some(place) = cap.open(peer.ip()) else { continue };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        // The read timeout counts from accept: hyper's starts at a request's first byte,
        // and telling HTTP/1 from HTTP/2 waits for bytes with none.
        let first_request = Arc::new(tokio::sync::Notify::new());
        let arrived = first_request.clone();
        let http2 = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (router, judged, told, probes) = (router.clone(), cap.clone(), lifecycle.clone(), probes.clone());
        let is_http2 = http2.clone();
        let service = tower::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            arrived.notify_one();
            if request.version() == http::Version::HTTP_2 {
                is_http2.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            // Probes first: an orchestrator sends `Host: <pod address>`, or none.
            let probe = probes.as_ref().and_then(|probes| probes(request.uri().path()));
            let refusal = if probe.is_some() { None } else { judged.admission.hosts.refusal(&request) };
            if refusal.is_some() {
                judged.hosts.refused_on(
                    judged.admission.name,
                    "refused requests whose Host header the listener does not answer",
                );
            }
            request.extensions_mut().insert(axum::extract::ConnectInfo::<SocketAddr>(peer));
            let (router, lifecycle) = (router.clone(), told.clone());
            let http1 = request.version() < http::Version::HTTP_2;
            async move {
                let mut response = match (probe, refusal) {
                    (Some(probe), _) => probe.await,
                    (None, Some(refusal)) => refusal,
                    (None, None) => router.oneshot(request).await?,
                };
                if http1 && lifecycle.is_draining() {
                    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
                }
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service).into_owned();
        let lifecycle = lifecycle.clone();
        connections.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let silent_for = tokio::time::sleep(read_timeout);
            let mut silent_for = std::pin::pin!(silent_for);
            // HTTP/2 is told to go away as the drain begins (HTTP/1 learns it from its next
            // response); every connection is closed gracefully at closing: at once if idle
            // or if it has sent nothing yet (a client's pool may open one it never uses),
            // else after the response in flight.
            let (mut heard, mut told_http2, mut closed) = (false, false, false);
            let ended = loop {
                tokio::select! {
                    ended = &mut connection => break ended,
                    () = first_request.notified(), if !heard => heard = true,
                    () = &mut silent_for, if !heard => {
                        place.cap.silent.refused_on(place.cap.admission.name, "closed connections that sent no request within the read timeout");
                        return;
                    }
                    () = lifecycle.draining(), if !told_http2 && !closed && http2.load(std::sync::atomic::Ordering::Relaxed) => {
                        told_http2 = true;
                        connection.as_mut().graceful_shutdown();
                    }
                    () = lifecycle.closing(), if !closed => {
                        closed = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, "a connection ended with an error");
            }
            drop(place);
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout_at(lifecycle.deadline().into(), connections.wait()).await.is_err() {
        tracing::warn!(listener = cap.admission.name, "closed connections still open when the shutdown grace ran out");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: Option<&str>) -> http::Request<()> {
        let mut request = http::Request::builder().uri("/metrics");
        if let Some(host) = host {
            request = request.header(http::header::HOST, host);
        }
        request.body(()).unwrap()
    }

    fn status(hosts: &Hosts, host: Option<&str>) -> u16 {
        hosts.refusal(&request(host)).map_or(200, |refused| refused.status().as_u16())
    }

    #[test]
    fn a_named_listener_answers_its_names_only() {
        let hosts = Hosts::Named(AllowedHost::all(&["localhost".into(), "app.example:443".into()]));
        assert_eq!(status(&hosts, Some("localhost:8080")), 200);
        assert_eq!(status(&hosts, Some("LOCALHOST")), 200);
        assert_eq!(status(&hosts, Some("app.example:443")), 200);
        assert_eq!(status(&hosts, Some("app.example:80")), 403);
        assert_eq!(status(&hosts, Some("evil.example")), 403);
        assert_eq!(status(&hosts, Some("10.0.0.7:9090")), 403);
        assert_eq!(status(&hosts, None), 400);
        assert_eq!(status(&hosts, Some("a b")), 400);
        assert_eq!(status(&Hosts::Named(Vec::new()), Some("evil.example")), 200);
    }

    #[test]
    fn a_probe_listener_answers_addresses_and_no_host_too() {
        let hosts = Hosts::NamedOrAddress(AllowedHost::all(&["localhost".into()]));
        assert_eq!(status(&hosts, Some("10.0.3.7:9090")), 200);
        assert_eq!(status(&hosts, Some("[fd00::7]:9090")), 200);
        assert_eq!(status(&hosts, Some("localhost")), 200);
        assert_eq!(status(&hosts, None), 200);
        assert_eq!(status(&hosts, Some("evil.example")), 403);
        assert_eq!(status(&hosts, Some("a b")), 400);
    }
}

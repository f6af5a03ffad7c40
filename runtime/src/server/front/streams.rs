//! The caps on live `subscriptions/listen` streams, server-wide and per client: one count,
//! shared by the owned path and rmcp, whichever serves a stream.

use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::response::Response;

use super::limits::full;
use crate::server::refusal_log::RefusalLog;

/// The caps on live `subscriptions/listen` streams: server-wide and per client. A stream
/// needs no token, and each holds a connection and a handler, so both are bounded.
#[derive(Debug)]
pub(crate) struct StreamCap {
    max: usize,
    max_per_client: usize,
    /// Live streams by client; the total is their sum.
    open: std::sync::Mutex<(usize, std::collections::HashMap<String, usize>)>,
    /// Refusals not yet logged, and when the last log line was written.
    refusals: RefusalLog,
}

/// A place among the live streams, freed when dropped (when the stream's reply ends).
#[derive(Debug)]
pub(crate) struct StreamPlace {
    cap: Arc<StreamCap>,
    client: String,
}

/// A stream refused past a cap.
#[derive(Debug)]
pub(crate) struct StreamsFull {
    message: String,
}

impl StreamCap {
    pub(crate) fn new(max: usize, max_per_client: usize) -> Self {
        Self { max, max_per_client, open: Default::default(), refusals: RefusalLog::default() }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, (usize, std::collections::HashMap<String, usize>)> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for the stream `request` opens, if both caps allow it. The client is the
    /// request's principal, else its peer address (never a header it carries).
    pub(crate) fn open(self: &Arc<Self>, request: &http::request::Parts) -> Result<StreamPlace, StreamsFull> {
        let client = match request.extensions.get::<crate::Principal>() {
            Some(principal) => format!("principal {}", principal.key()),
            None => request
                .extensions
                .get::<ConnectInfo<std::net::SocketAddr>>()
                .map_or_else(|| "one client".to_string(), |ConnectInfo(addr)| format!("address {}", addr.ip())),
        };
        let mut counts = self.counts();
        let (total, by_client) = &mut *counts;
        let of_client = by_client.get(&client).copied().unwrap_or(0);
        let message = if *total >= self.max {
            format!("this server holds its maximum of {} listening streams; retry later", self.max)
        } else if of_client >= self.max_per_client {
            format!("this client holds its maximum of {} listening streams; close one first", self.max_per_client)
        } else {
            *total += 1;
            by_client.insert(client.clone(), of_client + 1);
            return Ok(StreamPlace { cap: self.clone(), client });
        };
        drop(counts);
        self.refusals.refused("refused listening streams past the cap");
        Err(StreamsFull { message })
    }
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut counts = self.cap.counts();
        let (total, by_client) = &mut *counts;
        *total = total.saturating_sub(1);
        if let Some(count) = by_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                by_client.remove(&self.client);
            }
        }
    }
}

impl StreamsFull {
    /// 503 with `Retry-After`, as a session past the session cap gets.
    pub(crate) fn answer(self, id: serde_json::Value) -> Response {
        full(self.message, id)
    }
}

//! `subscriptions/listen` (MCP 2026-07-28): the clients that hold a listening stream open,
//! each with what it asked to hear. A stream is a request of its own, served by a handler
//! made for it, so the streams live here, in the server, where whatever changes a list can
//! reach them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::service::SubscriptionSink;

/// The open listening streams of this server (this replica).
#[derive(Default)]
pub(crate) struct Listeners {
    next: AtomicU64,
    streams: Mutex<HashMap<u64, SubscriptionSink>>,
}

/// One open stream: leaves the register when dropped (the client closed it, or the
/// request was cancelled and its future dropped).
pub(crate) struct Listening<'a> {
    listeners: &'a Listeners,
    id: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.listeners.streams().remove(&self.id);
    }
}

impl Listeners {
    fn streams(&self) -> std::sync::MutexGuard<'_, HashMap<u64, SubscriptionSink>> {
        self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers an acknowledged stream until the returned guard is dropped.
    pub(crate) fn listen(&self, sink: SubscriptionSink) -> Listening<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.streams().insert(id, sink);
        Listening { listeners: self, id }
    }

    /// How many streams are open.
    pub(crate) fn len(&self) -> usize {
        self.streams().len()
    }

    /// Tells every stream that asked for `toolsListChanged` that the tool list changed.
    pub(crate) async fn tools_changed(&self) {
        let streams: Vec<SubscriptionSink> =
            self.streams().values().filter(|s| s.accepted().tools_list_changed == Some(true)).cloned().collect();
        for stream in streams {
            // A stream that closed meanwhile leaves the register by itself.
            if let Err(error) = stream.notify_tool_list_changed().await {
                tracing::debug!(%error, "a listening stream could not be told the tool list changed");
            }
        }
    }
}

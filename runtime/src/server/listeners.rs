//! `subscriptions/listen` (MCP 2026-07-28): the clients that hold a listening stream open,
//! each with what it asked to hear. A stream is a request of its own, served by a handler
//! made for it, so the streams live here, in the server, where whatever changes a list can
//! reach them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::service::SubscriptionSink;

use crate::store::StoreKey;

/// The open listening streams of this server (this replica).
#[derive(Default)]
pub(crate) struct Listeners {
    next: AtomicU64,
    streams: Mutex<HashMap<u64, Stream>>,
}

/// One stream: where to send, and the resources it listens to — each URI with the
/// instance it names for the stream's principal, for a template bound to instances.
struct Stream {
    sink: SubscriptionSink,
    resources: Vec<(String, Option<StoreKey>)>,
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
    fn streams(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Stream>> {
        self.streams.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers an acknowledged stream, listening to `resources`, until the returned
    /// guard is dropped.
    pub(crate) fn listen(&self, sink: SubscriptionSink, resources: Vec<(String, Option<StoreKey>)>) -> Listening<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.streams().insert(id, Stream { sink, resources });
        Listening { listeners: self, id }
    }

    /// How many streams are open.
    pub(crate) fn len(&self) -> usize {
        self.streams().len()
    }

    /// Tells every stream that asked for `toolsListChanged` that the tool list changed.
    pub(crate) async fn tools_changed(&self) {
        self.tell(
            |s| s.sink.accepted().tools_list_changed == Some(true),
            |sink| async move { sink.notify_tool_list_changed().await },
        )
        .await;
    }

    /// Tells every stream that asked for `promptsListChanged` that the prompt list changed.
    pub(crate) async fn prompts_changed(&self) {
        self.tell(
            |s| s.sink.accepted().prompts_list_changed == Some(true),
            |sink| async move { sink.notify_prompt_list_changed().await },
        )
        .await;
    }

    /// Tells every stream that asked for `resourcesListChanged` that the resource list
    /// changed.
    pub(crate) async fn resources_changed(&self) {
        self.tell(
            |s| s.sink.accepted().resources_list_changed == Some(true),
            |sink| async move { sink.notify_resource_list_changed().await },
        )
        .await;
    }

    /// Tells every stream listening to `uri` that it changed.
    pub(crate) async fn resource_updated(&self, uri: &str) {
        let uri = uri.to_string();
        self.tell(
            |s| s.resources.iter().any(|(listened, _)| *listened == uri),
            |sink| {
                let uri = uri.clone();
                async move { sink.notify_resource_updated(uri).await }
            },
        )
        .await;
    }

    /// The streams listening to a resource of the instance at `key`, each with the
    /// resource's URI: chosen at once, so a commit nobody listens to costs no task.
    pub(crate) fn listening_to(&self, key: &StoreKey) -> Vec<(SubscriptionSink, String)> {
        self.streams()
            .values()
            .flat_map(|stream| {
                let uris = stream.resources.iter().filter(|(_, of)| of.as_ref() == Some(key));
                uris.map(|(uri, _)| (stream.sink.clone(), uri.clone())).collect::<Vec<_>>()
            })
            .collect()
    }

    /// Tells each stream of `listening` (from [`Listeners::listening_to`]) that its
    /// resource changed.
    pub(crate) async fn tell_moved(listening: Vec<(SubscriptionSink, String)>) {
        for (sink, uri) in listening {
            if let Err(error) = sink.notify_resource_updated(uri).await {
                tracing::debug!(%error, "a listening stream could not be told a resource changed");
            }
        }
    }

    /// Sends `send` to every stream `chosen` picks; a stream that closed meanwhile leaves
    /// the register by itself.
    async fn tell<F, Fut>(&self, chosen: impl Fn(&Stream) -> bool, send: F)
    where
        F: Fn(SubscriptionSink) -> Fut,
        Fut: std::future::Future<Output = Result<(), rmcp::service::SubscriptionSendError>>,
    {
        let sinks: Vec<SubscriptionSink> =
            self.streams().values().filter(|s| chosen(s)).map(|s| s.sink.clone()).collect();
        for sink in sinks {
            if let Err(error) = send(sink).await {
                tracing::debug!(%error, "a listening stream could not be told of a change");
            }
        }
    }
}

//! `subscriptions/listen` (MCP 2026-07-28): the clients that hold a listening stream open,
//! each with what it asked to hear. A stream is a request of its own, so the streams live
//! here, in the server, where whatever changes a list can reach them. Two kinds register:
//!
//! - a stream the HTTP front's owned path serves ([`Listeners::listen_owned`]): it
//!   registers before its acknowledgement is written, and what it hears waits in its
//!   [`Inbox`] for its response body to write;
//! - a stream rmcp serves (over stdio, or an HTTP request the owned path left to rmcp),
//!   told through rmcp's sink. rmcp acknowledges such a stream before it hands it to the
//!   handler, so a client may send its next request (a call that moves the instance it
//!   listens to) before the stream is registered. Nothing said in that gap is lost: from
//!   the moment a stream is accepted ([`Listeners::opening`]) until it registers, what
//!   happens is kept, and the stream hears it first ([`Listeners::listen`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use rmcp::model::{
    ResourceListChangedNotification, ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
    SubscriptionFilter, ToolListChangedNotification,
};
use rmcp::service::SubscriptionSink;

use crate::store::StoreKey;

/// How long an accepted stream may take to register before what it might miss stops
/// being kept for it (its acknowledgement could not be sent, say).
const OPENING_PATIENCE: Duration = Duration::from_secs(10);

/// At most this many changes are kept for streams still opening; past it the oldest go.
const KEPT_FOR_OPENING: usize = 1024;

/// The open listening streams of this server (this replica).
#[derive(Default)]
pub(crate) struct Listeners {
    register: Mutex<Register>,
}

#[derive(Default)]
struct Register {
    /// The number of the next stream, and of the next change.
    next_stream: u64,
    next_change: u64,
    streams: HashMap<u64, Stream>,
    /// Streams accepted and not yet registered: the first change each must hear, and when
    /// it was accepted.
    opening: Vec<(u64, Instant)>,
    /// The changes since the earliest stream still opening, numbered.
    kept: VecDeque<(u64, Change)>,
}

/// One stream: where to send, the lists it hears of, and the resources it listens to —
/// each URI with the instance it names for the stream's principal, for a template bound to
/// instances.
struct Stream {
    sink: Sink,
    lists: Lists,
    resources: Vec<(String, Option<StoreKey>)>,
}

/// Where a stream's notices go.
#[derive(Clone)]
enum Sink {
    /// A stream rmcp serves: through its subscription's sink.
    Rmcp(SubscriptionSink),
    /// A stream the owned path serves: into its inbox.
    Owned(Arc<Inbox>),
}

/// Which list changes a stream accepted to hear.
#[derive(Clone, Copy)]
struct Lists {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl From<&SubscriptionFilter> for Lists {
    fn from(accepted: &SubscriptionFilter) -> Self {
        Self {
            tools: accepted.tools_list_changed == Some(true),
            prompts: accepted.prompts_list_changed == Some(true),
            resources: accepted.resources_list_changed == Some(true),
        }
    }
}

/// The notices waiting for one stream the owned path serves, and the task to wake when
/// one arrives. A notice already waiting is not queued again: each says "this changed", so
/// the stream hears it once, and the inbox never holds more than what the stream listens
/// to — a client slow to read holds no one up and grows nothing.
#[derive(Default)]
pub(crate) struct Inbox {
    waiting: Mutex<VecDeque<Notice>>,
    waker: AtomicWaker,
}

impl Inbox {
    fn waiting(&self) -> std::sync::MutexGuard<'_, VecDeque<Notice>> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn put(&self, notice: Notice) {
        {
            let mut waiting = self.waiting();
            if !waiting.contains(&notice) {
                waiting.push_back(notice);
            }
        }
        self.waker.wake();
    }

    /// Every notice waiting, oldest first, or `Pending` (woken when one arrives).
    pub(crate) fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Vec<Notice>> {
        self.waker.register(cx.waker());
        let mut waiting = self.waiting();
        if waiting.is_empty() { Poll::Pending } else { Poll::Ready(waiting.drain(..).collect()) }
    }
}

/// Something a stream may hear.
#[derive(Clone)]
enum Change {
    Tools,
    Prompts,
    Resources,
    /// A resource, by its URI.
    Resource(String),
    /// An instance moved: every resource of it.
    Instance(StoreKey),
}

/// A notification for one stream.
#[derive(Debug, PartialEq)]
pub(crate) enum Notice {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    Updated(String),
}

impl Notice {
    /// The notification, as MCP names it (without the stream's subscription id).
    pub(crate) fn into_notification(self) -> ServerNotification {
        match self {
            Notice::ToolsChanged => ToolListChangedNotification::default().into(),
            Notice::PromptsChanged => rmcp::model::PromptListChangedNotification::default().into(),
            Notice::ResourcesChanged => ResourceListChangedNotification::default().into(),
            Notice::Updated(uri) => ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri)).into(),
        }
    }
}

impl Stream {
    /// What this stream hears of `change`.
    fn hears(&self, change: &Change) -> Vec<Notice> {
        let lists = self.lists;
        match change {
            Change::Tools if lists.tools => vec![Notice::ToolsChanged],
            Change::Prompts if lists.prompts => vec![Notice::PromptsChanged],
            Change::Resources if lists.resources => vec![Notice::ResourcesChanged],
            Change::Resource(uri) if self.resources.iter().any(|(listened, _)| listened == uri) => {
                vec![Notice::Updated(uri.clone())]
            }
            Change::Instance(key) => self
                .resources
                .iter()
                .filter(|(_, of)| of.as_ref() == Some(key))
                .map(|(uri, _)| Notice::Updated(uri.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl Register {
    /// Numbers `change` and keeps it if a stream is still opening; returns what each open
    /// stream hears of it.
    fn record(&mut self, change: Change) -> Vec<(Sink, Notice)> {
        let heard = self
            .streams
            .values()
            .flat_map(|stream| stream.hears(&change).into_iter().map(|notice| (stream.sink.clone(), notice)))
            .collect();
        let number = self.next_change;
        self.next_change += 1;
        self.forget_stale_openings();
        if !self.opening.is_empty() {
            if self.kept.len() == KEPT_FOR_OPENING {
                self.kept.pop_front();
            }
            self.kept.push_back((number, change));
        }
        heard
    }

    fn forget_stale_openings(&mut self) {
        let now = Instant::now();
        self.opening.retain(|(_, accepted)| now.duration_since(*accepted) < OPENING_PATIENCE);
        match self.opening.iter().map(|(first, _)| *first).min() {
            Some(earliest) => self.kept.retain(|(number, _)| *number >= earliest),
            None => self.kept.clear(),
        }
    }
}

/// One open stream rmcp serves: leaves the register when dropped (the client closed it,
/// or the request was cancelled and its future dropped).
pub(crate) struct Listening<'a> {
    listeners: &'a Listeners,
    id: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.listeners.leave(self.id);
    }
}

impl Listeners {
    fn register(&self) -> std::sync::MutexGuard<'_, Register> {
        self.register.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A stream was accepted and is about to be acknowledged: from now on, what changes
    /// is kept until it registers.
    pub(crate) fn opening(&self) {
        let mut register = self.register();
        let first = register.next_change;
        register.opening.push((first, Instant::now()));
    }

    /// Registers an acknowledged stream, listening to `resources`, until the returned
    /// guard is dropped, and tells it first what changed since it was accepted.
    pub(crate) async fn listen(
        &self,
        sink: SubscriptionSink,
        resources: Vec<(String, Option<StoreKey>)>,
    ) -> Listening<'_> {
        let lists = Lists::from(sink.accepted());
        let stream = Stream { sink: Sink::Rmcp(sink), lists, resources };
        let (id, missed) = {
            let mut register = self.register();
            // Streams opening together cannot be told apart: each hears from the earliest
            // of them, and the latest leaves the list, so none hears less than it must.
            let earliest = register.opening.iter().map(|(first, _)| *first).min();
            let latest = register.opening.iter().enumerate().max_by_key(|(_, (first, _))| *first).map(|(at, _)| at);
            if let Some(at) = latest {
                register.opening.swap_remove(at);
            }
            let missed: Vec<Notice> = match earliest {
                Some(earliest) => register
                    .kept
                    .iter()
                    .filter(|(number, _)| *number >= earliest)
                    .flat_map(|(_, change)| stream.hears(change))
                    .collect(),
                None => Vec::new(),
            };
            register.forget_stale_openings();
            let id = register.next_stream;
            register.next_stream += 1;
            let sink = stream.sink.clone();
            register.streams.insert(id, stream);
            (id, missed.into_iter().map(|notice| (sink.clone(), notice)).collect::<Vec<_>>())
        };
        send(missed).await;
        Listening { listeners: self, id }
    }

    /// Registers a stream the owned path serves, which `accepted` (acknowledged) and
    /// listens to `resources`, until [`Listeners::leave`] is told its number: that number,
    /// and the inbox its notices wait in.
    pub(crate) fn listen_owned(
        &self,
        accepted: &SubscriptionFilter,
        resources: Vec<(String, Option<StoreKey>)>,
    ) -> (u64, Arc<Inbox>) {
        let inbox = Arc::new(Inbox::default());
        let stream = Stream { sink: Sink::Owned(inbox.clone()), lists: Lists::from(accepted), resources };
        let mut register = self.register();
        let id = register.next_stream;
        register.next_stream += 1;
        register.streams.insert(id, stream);
        (id, inbox)
    }

    /// Stream `id` ended: it hears nothing more.
    pub(crate) fn leave(&self, id: u64) {
        self.register().streams.remove(&id);
    }

    /// How many streams are open.
    pub(crate) fn len(&self) -> usize {
        self.register().streams.len()
    }

    /// Tells every stream that asked for `toolsListChanged` that the tool list changed.
    pub(crate) async fn tools_changed(&self) {
        let heard = self.register().record(Change::Tools);
        send(heard).await;
    }

    /// Tells every stream that asked for `promptsListChanged` that the prompt list changed.
    pub(crate) async fn prompts_changed(&self) {
        let heard = self.register().record(Change::Prompts);
        send(heard).await;
    }

    /// Tells every stream that asked for `resourcesListChanged` that the resource list
    /// changed.
    pub(crate) async fn resources_changed(&self) {
        let heard = self.register().record(Change::Resources);
        send(heard).await;
    }

    /// Tells every stream listening to `uri` that it changed.
    pub(crate) async fn resource_updated(&self, uri: &str) {
        let heard = self.register().record(Change::Resource(uri.to_string()));
        send(heard).await;
    }

    /// The instance at `key` moved: what each stream listening to one of its resources
    /// hears, chosen at once (so a commit nobody listens to costs no task); send it with
    /// [`Listeners::tell_moved`].
    pub(crate) fn moved(&self, key: &StoreKey) -> Moved {
        let mut register = self.register();
        if register.streams.is_empty() && register.opening.is_empty() {
            return Moved(Vec::new());
        }
        Moved(register.record(Change::Instance(key.clone())))
    }

    /// Sends what [`Listeners::moved`] chose.
    pub(crate) async fn tell_moved(moved: Moved) {
        send(moved.0).await;
    }
}

/// What the streams hear of an instance that moved.
pub(crate) struct Moved(Vec<(Sink, Notice)>);

impl Moved {
    /// No stream hears of it.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Sends each notice to its stream; a stream that closed meanwhile leaves the register by
/// itself.
async fn send(notices: Vec<(Sink, Notice)>) {
    for (sink, notice) in notices {
        match sink {
            Sink::Owned(inbox) => inbox.put(notice),
            Sink::Rmcp(sink) => {
                if let Err(error) = sink.send(notice.into_notification()).await {
                    tracing::debug!(%error, "a listening stream could not be told of a change");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waker_context() -> Context<'static> {
        Context::from_waker(std::task::Waker::noop())
    }

    /// A stream the owned path serves hears what it accepted, each notice once however
    /// often it happened before the stream read it, and nothing once it left.
    #[tokio::test]
    async fn an_owned_stream_hears_each_change_once_until_it_leaves() {
        let listeners = Listeners::default();
        let accepted = SubscriptionFilter::builder().tools_list_changed().build();
        let receipt = ("invoice://INV-1/receipt".to_string(), Some(StoreKey::instance("invoice", "INV-1")));
        let (id, inbox) = listeners.listen_owned(&accepted, vec![receipt]);
        let mut cx = waker_context();
        assert!(inbox.poll_take(&mut cx).is_pending(), "nothing yet");

        listeners.tools_changed().await;
        listeners.prompts_changed().await;
        listeners.tools_changed().await;
        let moved = listeners.moved(&StoreKey::instance("invoice", "INV-1"));
        Listeners::tell_moved(moved).await;
        Listeners::tell_moved(listeners.moved(&StoreKey::instance("invoice", "INV-2"))).await;
        let heard = inbox.poll_take(&mut cx);
        let expected = vec![Notice::ToolsChanged, Notice::Updated("invoice://INV-1/receipt".into())];
        assert_eq!(heard, Poll::Ready(expected), "prompts were not accepted; INV-2 is not listened to");

        listeners.leave(id);
        assert_eq!(listeners.len(), 0);
        listeners.tools_changed().await;
        assert!(inbox.poll_take(&mut cx).is_pending(), "a stream that left hears nothing");
    }
}

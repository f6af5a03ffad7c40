//! The owned path's listening streams: a `subscriptions/listen` of MCP 2026-07-28 answered
//! with an SSE body of toolgate's own, written as rmcp writes one — its acknowledgement
//! first, then each notification the stream accepted, tagged with its subscription id, a
//! keep-alive comment after 15 s of silence, and, when the server closes, the request's
//! final result. What a stream holds while it is open: its place under the caps, its entry
//! in the server's register, an inbox and two timers — not rmcp's service, task and
//! channels per request.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use futures_util::Stream;
use rmcp::model::{
    GetMeta, NotificationMetaObject, RequestId, ServerJsonRpcMessage, ServerNotification, ServerResult,
    SubscriptionFilter, SubscriptionsAcknowledgedNotification, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenResult,
};
use tokio::time::Sleep;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::reply::message_event as message;
use crate::server::Shared;
use crate::server::front::streams::StreamPlace;
use crate::server::http_options::SSE_KEEP_ALIVE;
use crate::server::listeners::Inbox;

/// The filter a stream is acknowledged with, narrowed as rmcp narrows it: what the server
/// honours of `requested` (`honoured`), within what it advertises (`capabilities`).
pub(super) fn accepted(
    requested: &SubscriptionFilter,
    honoured: &SubscriptionFilter,
    capabilities: &rmcp::model::ServerCapabilities,
) -> SubscriptionFilter {
    requested.intersection(honoured).intersection(&requested.supported_by(capabilities))
}

/// One open stream's response body.
pub(super) struct ListenEvents {
    /// The subscription: the listen request's id.
    id: RequestId,
    /// The acknowledgement, until it is written.
    acknowledgement: Option<String>,
    inbox: Arc<Inbox>,
    /// Its number in the server's register, which it leaves when dropped.
    number: u64,
    shared: Arc<Shared>,
    keep_alive: Pin<Box<Sleep>>,
    closing: Pin<Box<WaitForCancellationFutureOwned>>,
    ended: bool,
    _place: StreamPlace,
}

impl ListenEvents {
    /// The body of stream `id`, registered as `number` with `inbox`, acknowledged with
    /// `accepted`.
    pub(super) fn new(
        shared: Arc<Shared>,
        id: RequestId,
        accepted: SubscriptionFilter,
        (number, inbox): (u64, Arc<Inbox>),
        place: StreamPlace,
    ) -> Self {
        let mut acknowledgement =
            SubscriptionsAcknowledgedNotification::new(SubscriptionsAcknowledgedNotificationParams::new(accepted));
        let mut meta = NotificationMetaObject::new();
        meta.set_subscription_id(id.clone());
        acknowledgement.extensions.insert(meta);
        let acknowledgement = ServerNotification::SubscriptionsAcknowledgedNotification(acknowledgement);
        let acknowledgement = message(&ServerJsonRpcMessage::notification(acknowledgement));
        let closing = Box::pin(shared.lifecycle.closing_owned());
        Self {
            id,
            acknowledgement: Some(acknowledgement),
            inbox,
            number,
            shared,
            keep_alive: Box::pin(tokio::time::sleep(SSE_KEEP_ALIVE)),
            closing,
            ended: false,
            _place: place,
        }
    }

    /// The request's final result, as rmcp sends it when a listening handler returns.
    fn final_result(&self) -> String {
        let mut result = SubscriptionsListenResult::complete(self.id.clone());
        result.meta.set_server_info(self.shared.implementation.clone());
        let result = ServerResult::SubscriptionsListenResult(result);
        message(&ServerJsonRpcMessage::response(result, self.id.clone()))
    }
}

impl Stream for ListenEvents {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let mut events = self.acknowledgement.take().unwrap_or_default();
        if let Poll::Ready(notices) = self.inbox.poll_take(cx) {
            for notice in notices {
                let mut notification = notice.into_notification();
                notification.get_meta_mut().set_subscription_id(self.id.clone());
                events.push_str(&message(&ServerJsonRpcMessage::notification(notification)));
            }
        }
        if self.closing.as_mut().poll(cx).is_ready() {
            events.push_str(&self.final_result());
            self.ended = true;
        }
        if events.is_empty() {
            std::task::ready!(self.keep_alive.as_mut().poll(cx));
            events.push_str(":\n\n");
        }
        let next = tokio::time::Instant::now() + SSE_KEEP_ALIVE;
        self.keep_alive.as_mut().reset(next);
        Poll::Ready(Some(Ok(Bytes::from(events))))
    }
}

impl Drop for ListenEvents {
    fn drop(&mut self) {
        self.shared.listeners.leave(self.number);
    }
}

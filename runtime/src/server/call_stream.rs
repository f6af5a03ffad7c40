//! Messages a call causes travel on that call's own response stream.
//!
//! Over stateful Streamable HTTP, rmcp 3.11's `LocalSessionManager` sends every
//! notification except progress and cancellation to the session's standalone GET stream,
//! which a client may never open: a handler's log lines and the `list_changed` a
//! transition causes would be lost to it. [`CallStreamSessions`] is that session manager
//! plus one thing: while a request's response stream is open, messages sent for that
//! request go into it, ahead of the response. It is also where the session cap is
//! enforced ([`SessionCap`]), because only here is every session rmcp opens seen.
//! Everything else is rmcp's.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::http::{SessionCap, SessionsError};
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Where a call's messages go while its response stream is open.
pub(crate) type CallSink = UnboundedSender<ServerJsonRpcMessage>;

/// The open response streams of calls, by session and request.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallStreams(Arc<Mutex<HashMap<SessionId, HashMap<RequestId, CallSink>>>>);

/// Which stream: a session, and a request in it.
type StreamKey = (SessionId, RequestId);

impl CallStreams {
    /// The sink of request `request` in session `session`, while its stream is open.
    pub(crate) fn sink(&self, session: &str, request: &RequestId) -> Option<CallSink> {
        self.lock().get(session)?.get(request).cloned()
    }

    fn open(&self, (session, request): StreamKey) -> UnboundedReceiver<ServerJsonRpcMessage> {
        let (sink, receiver) = unbounded_channel();
        self.lock().entry(session).or_default().insert(request, sink);
        receiver
    }

    fn close(&self, (session, request): &StreamKey) {
        let mut streams = self.lock();
        if let Some(requests) = streams.get_mut(session) {
            requests.remove(request);
            if requests.is_empty() {
                streams.remove(session);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, HashMap<RequestId, CallSink>>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// rmcp's `LocalSessionManager`, with each request's messages on its own stream and at
/// most the cap of sessions.
pub(crate) struct CallStreamSessions {
    pub(crate) inner: LocalSessionManager,
    pub(crate) streams: CallStreams,
    pub(crate) cap: SessionCap,
}

type BoxedSse = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>;

/// The response stream of one request: the messages the call sent first, then rmcp's
/// (the response last). Closing it, or dropping it, closes the sink.
struct CallStream {
    caused: UnboundedReceiver<ServerJsonRpcMessage>,
    rmcp: BoxedSse,
    streams: CallStreams,
    key: StreamKey,
}

impl Stream for CallStream {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // What the call sent before its response precedes the response: drained first.
        if let Poll::Ready(Some(message)) = self.caused.poll_recv(cx) {
            return Poll::Ready(Some(ServerSseMessage::from_message(message)));
        }
        let next = self.rmcp.as_mut().poll_next(cx);
        if let Poll::Ready(None) = next {
            self.streams.close(&self.key);
        }
        next
    }
}

impl Drop for CallStream {
    fn drop(&mut self) {
        self.streams.close(&self.key);
    }
}

impl SessionManager for CallStreamSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.cap.create(&self.inner, self.inner.create_session()).await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Only a tool call causes messages of its own.
        let call = match &message {
            ClientJsonRpcMessage::Request(request) if matches!(request.request, ClientRequest::CallToolRequest(_)) => {
                Some(request.id.clone())
            }
            _ => None,
        };
        let Some(request) = call else {
            let stream: BoxedSse = Box::pin(self.inner.create_stream(id, message).await?);
            return Ok(stream);
        };
        // Open before rmcp sees the request: its handler may send at once.
        let key = (id.clone(), request);
        let caused = self.streams.open(key.clone());
        match self.inner.create_stream(id, message).await {
            Ok(rmcp) => {
                let stream: BoxedSse =
                    Box::pin(CallStream { caused, rmcp: Box::pin(rmcp), streams: self.streams.clone(), key });
                Ok(stream)
            }
            Err(error) => {
                self.streams.close(&key);
                Err(error.into())
            }
        }
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // A session already here is not one more.
        if self.inner.has_session(&id).await? {
            return Ok(self.inner.restore_session(id).await?);
        }
        self.cap.create(&self.inner, self.inner.restore_session(id)).await
    }
}

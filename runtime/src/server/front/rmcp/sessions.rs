//! Messages a call causes travel on that call's own response stream.
//!
//! Over stateful Streamable HTTP, rmcp 3.11's `LocalSessionManager` sends every
//! notification except progress and cancellation to the session's standalone GET stream,
//! which a client may never open: a handler's log lines and the `list_changed` a
//! transition causes would be lost to it. [`CallStreamSessions`] is that session manager
//! plus one thing: a `tools/call`'s response stream gets a [`CallSink`], handed to the
//! call itself in its request's extensions (rmcp passes them to the handler's context), and
//! what the call sends into it goes out ahead of the response. Nothing is looked up by a
//! header or kept in a shared table: a call finds its own sink, or none. It is also where
//! the session cap is enforced ([`SessionCap`]), because only here is every session rmcp
//! opens seen.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::super::session_owner::SessionOwners;
use super::session_cap::{SessionCap, SessionsError};
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::server::connection::{CallSink, SessionTag};

/// rmcp's `LocalSessionManager`, with each call's messages on its own stream and at most
/// the cap of sessions.
pub(crate) struct CallStreamSessions {
    pub(crate) inner: LocalSessionManager,
    pub(crate) cap: SessionCap,
    /// Who opened each session, for the front to check ([`super::super::session_owner`]).
    pub(crate) owners: std::sync::Arc<SessionOwners>,
}

impl CallStreamSessions {
    /// Closes every session once the calls in flight at shutdown have ended (their GET
    /// streams end, so their clients reconnect elsewhere), on the current Tokio runtime.
    pub(crate) fn close_all_at_shutdown(
        self: &std::sync::Arc<Self>,
        lifecycle: &std::sync::Arc<crate::server::lifecycle::Lifecycle>,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (sessions, lifecycle) = (std::sync::Arc::downgrade(self), lifecycle.clone());
        runtime.spawn(async move {
            lifecycle.sessions_may_close().await;
            let Some(sessions) = sessions.upgrade() else { return };
            let ids: Vec<SessionId> = sessions.inner.sessions.read().await.keys().cloned().collect();
            tracing::info!(sessions = ids.len(), "closing the stateful sessions");
            for id in ids {
                if let Err(error) = sessions.close_session(&id).await {
                    tracing::debug!(%error, "a session did not close cleanly");
                }
            }
        });
    }
}

type BoxedSse = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>;

/// The response stream of one call: the messages the call sent first, then rmcp's (the
/// response last). Dropping it closes the sink; later messages go through the peer.
struct CallStream<S> {
    caused: UnboundedReceiver<ServerJsonRpcMessage>,
    rmcp: S,
}

impl<S: Stream<Item = ServerSseMessage> + Unpin> Stream for CallStream<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // What the call sent before its response precedes the response: drained first.
        if let Poll::Ready(Some(message)) = self.caused.poll_recv(cx) {
            return Poll::Ready(Some(ServerSseMessage::from_message(message)));
        }
        Pin::new(&mut self.rmcp).poll_next(cx)
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
        let mut message = message;
        // The connection that initializes learns its session's id: the owned path finds it
        // by that id (`owned.rs`). rmcp passes a request's extensions to its handler.
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            use rmcp::model::GetExtensions;
            request.request.extensions_mut().insert(SessionTag(id.clone()));
            // Its owner is whoever the `initialize` request authenticated as.
            let opener = request.request.extensions().get::<http::request::Parts>().and_then(|p| p.extensions.get());
            let live = self.inner.sessions.try_read().ok();
            self.owners.opened(id, opener, |id| live.as_ref().is_none_or(|live| live.contains_key(id)));
        }
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners.closed(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Only a tool call causes messages of its own: its sink rides in its request,
        // which rmcp hands to the handler as the context's extensions. (It is opened
        // before rmcp sees the request: the handler may send at once.)
        let mut message = message;
        let caused = match &mut message {
            ClientJsonRpcMessage::Request(request) => match &mut request.request {
                ClientRequest::CallToolRequest(call) => {
                    let (sink, caused) = unbounded_channel();
                    call.extensions.insert(CallSink(sink));
                    Some(caused)
                }
                _ => None,
            },
            _ => None,
        };
        let rmcp = Box::pin(self.inner.create_stream(id, message).await?);
        let stream: BoxedSse = match caused {
            Some(caused) => Box::pin(CallStream { caused, rmcp }),
            None => rmcp,
        };
        Ok(stream)
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

//! rmcp's peer as the engine's [`ClientLink`], and [`RmcpPeer`]: the one way a handler
//! reaches rmcp's own peer.

// Sampling and roots are deprecated by SEP-2577 in rmcp 3.11 but still part of the
// revisions toolgate serves.
#![allow(deprecated)]

use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitationAction, InputRequest, ServerNotification};
use rmcp::service::{ElicitationMode, Peer};
use serde_json::Value;

use crate::client::{ClientLink, RequestFailed};

/// A client reached through rmcp's peer: stdio, a stateful HTTP session, or a request rmcp
/// serves.
#[derive(Debug, Clone)]
pub(crate) struct RmcpClient(pub(crate) Peer<RoleServer>);

#[async_trait]
impl ClientLink for RmcpClient {
    async fn notify(&self, notification: ServerNotification) -> Result<(), String> {
        self.0.send_notification(notification).await.map_err(|error| error.to_string())
    }

    async fn request(&self, request: &InputRequest) -> Result<Value, RequestFailed> {
        let refused = |error: rmcp::ServiceError| RequestFailed::Refused(error.to_string());
        let peer = &self.0;
        let answer = match request {
            InputRequest::Elicitation(request) => {
                serde_json::to_value(peer.create_elicitation(request.params.clone()).await.map_err(refused)?)
            }
            InputRequest::CreateMessage(request) => {
                serde_json::to_value(peer.create_message(request.params.clone()).await.map_err(refused)?)
            }
            InputRequest::ListRoots(_) => serde_json::to_value(peer.list_roots().await.map_err(refused)?),
            _ => return Err(RequestFailed::NotAskable),
        };
        answer.map_err(|error| RequestFailed::Refused(error.to_string()))
    }

    fn takes_url_elicitation(&self) -> bool {
        self.0.supported_elicitation_modes().contains(&ElicitationMode::Url)
    }

    async fn elicit_url(
        &self,
        message: String,
        url: url::Url,
        id: String,
        timeout: Duration,
    ) -> Result<ElicitationAction, String> {
        self.0.elicit_url_with_timeout(message, url, id, Some(timeout)).await.map_err(|error| error.to_string())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// rmcp's own peer of the client a handler serves, for what toolgate does not wrap.
///
/// A handler asks the client through [`Ctx::ask`](crate::Ctx::ask) and reports through
/// [`Ctx::progress`](crate::Ctx::progress) and [`Ctx::log`](crate::Ctx::log), on every
/// transport and protocol revision. A handler that truly needs rmcp's peer imports this
/// trait:
///
/// ```no_run
/// use toolgate_runtime::Ctx;
/// use toolgate_runtime::server::RmcpPeer;
///
/// async fn roots(ctx: &Ctx) {
///     if let Some(peer) = ctx.rmcp_peer() {
///         let _info = peer.peer_info();
///     }
/// }
/// ```
pub trait RmcpPeer {
    /// rmcp's peer, when rmcp serves the call (stdio, a stateful HTTP session, or a request
    /// the owned path handed to rmcp); `None` when toolgate's owned path serves it, which
    /// builds no rmcp service.
    fn rmcp_peer(&self) -> Option<&Peer<RoleServer>>;
}

impl RmcpPeer for crate::Ctx {
    fn rmcp_peer(&self) -> Option<&Peer<RoleServer>> {
        self.client.link().as_any().downcast_ref::<RmcpClient>().map(|client| &client.0)
    }
}

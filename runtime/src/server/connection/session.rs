//! What the owned path needs of a stateful session's connection: its client, that rmcp
//! hears it is in use, and its calls' cancellation.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::RoleServer;

use super::state::{Connection, lock};
use crate::server::ConnectionState;
use crate::server::Shared;

/// A call the owned path serves on a session, registered for `notifications/cancelled`
/// while it runs.
pub(crate) struct OwnedCallGuard {
    state: Arc<ConnectionState>,
    id: rmcp::model::RequestId,
}

impl Drop for OwnedCallGuard {
    fn drop(&mut self) {
        lock(&self.state.owned_calls).remove(&self.id);
    }
}

impl Shared {
    /// The live session rmcp calls `id`, as a connection, once it initialized.
    pub(crate) fn session_connection(self: &Arc<Self>, id: &str) -> Option<Connection> {
        let state = lock(&self.by_session_id).get(id)?.upgrade()?;
        state.peer.get()?;
        Some(Connection { shared: self.clone(), state })
    }
}

impl Connection {
    /// The client of this session: its peer, and the capabilities it declared.
    pub(crate) fn session_client(&self) -> Option<(rmcp::service::Peer<RoleServer>, rmcp::model::ClientCapabilities)> {
        let peer = self.state.peer.get()?.clone();
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        Some((peer, capabilities))
    }

    /// Whether rmcp's session should hear that it is in use (at most every 10 s, or a
    /// quarter of the idle timeout if that is shorter): the owned path's calls never reach
    /// it, and it closes a session idle for its timeout.
    pub(crate) fn due_for_touch(&self) -> bool {
        let now = crate::store::now_ms();
        let every = (self.shared.http.session_idle_timeout.as_millis() as u64 / 4).min(10_000);
        let last = self.state.owned_touch_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= every
            && self.state.owned_touch_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Registers a call the owned path serves on this session under its request `id`, so
    /// that the client can cancel it; unregistered when the guard drops.
    pub(crate) fn track(
        &self,
        id: rmcp::model::RequestId,
        cancel: tokio_util::sync::CancellationToken,
    ) -> OwnedCallGuard {
        lock(&self.state.owned_calls).insert(id.clone(), cancel);
        OwnedCallGuard { state: self.state.clone(), id }
    }
}

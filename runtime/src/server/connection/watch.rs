//! What a commit tells the other connections: the sessions listing from the instance it
//! moved re-list and hear `list_changed` if their list changed; the sessions and listening
//! streams subscribed to one of its resources hear `notifications/resources/updated`.

use std::sync::Arc;

use rmcp::model::{ServerNotification, ToolListChangedNotification};

use super::state::{Connection, lock};
use crate::auth::Principal;
use crate::flow::Origin;
use crate::server::ConnectionState;
use crate::server::Shared;
use crate::server::listeners::Listeners;
use crate::store::StoreKey;
use crate::visibility;

impl Connection {
    /// This kept session lists from its focus instances: it watches them.
    pub(super) fn watch_focus(&self, principal: Option<&Principal>) {
        // Watching lasts as long as the session: only a moved focus adds an instance.
        let moves = self.state.focus.moves();
        if self.state.watched_moves.swap(moves, std::sync::atomic::Ordering::AcqRel) == moves {
            return;
        }
        for (machine, entry) in self.state.focus.current() {
            let Some(m) = self.shared.engine.registry.machines().find(|m| m.id() == machine) else { continue };
            self.shared.watchers.watch(visibility::instance_key(m, &entry.instance, principal), &self.state);
        }
    }

    /// Another session's commit moved an instance this session lists from: tell its client
    /// if what it lists changed.
    async fn refresh(self) {
        let _one_at_a_time = self.state.refreshing.lock().await;
        let Origin::Connection(flow) = self.origin() else { return };
        let principal = self.state.opener.get().cloned().flatten();
        let Ok(tools) = self.listing(&flow, principal.as_ref()).await else { return };
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        {
            let mut listed = lock(&self.state.listed);
            match listed.as_ref() {
                // It never listed: nothing to correct.
                None => return,
                Some(before) if *before == names => return,
                Some(_) => *listed = Some(names),
            }
        }
        // A 2025-11-25 session (a 2026-07-28 list never changes with other requests).
        let Some(peer) = self.state.peer.get() else { return };
        let changed = ToolListChangedNotification { method: Default::default(), extensions: Default::default() };
        if let Err(error) = peer.send_notification(ServerNotification::ToolListChangedNotification(changed)).await {
            tracing::debug!(%error, "a session that lists from a moved instance could not be told");
        }
    }
}

impl Shared {
    /// A commit moved the instance at `key`: every other kept session listing from it
    /// re-lists and hears `list_changed` if its list changed (`except`: the session whose
    /// call it was, which its own reply tells).
    pub(crate) fn tell_watchers(self: &Arc<Self>, key: &StoreKey, except: Option<&Arc<ConnectionState>>) {
        self.tell_resource_subscribers(key);
        for state in self.watchers.watching(key) {
            if except.is_some_and(|caller| Arc::ptr_eq(caller, &state)) {
                continue;
            }
            let connection = Connection { shared: self.clone(), state };
            tokio::spawn(connection.refresh());
        }
    }
}

impl Shared {
    /// A commit moved the instance at `key`: the sessions subscribed to one of its
    /// resources, and the streams listening to one, hear `notifications/resources/updated`.
    fn tell_resource_subscribers(self: &Arc<Self>, key: &StoreKey) {
        let sessions = self.resource_watchers.watching(key);
        let listening = self.listeners.moved(key);
        if sessions.is_empty() && listening.is_empty() {
            return;
        }
        let key = key.clone();
        tokio::spawn(async move {
            for session in sessions {
                let uris: Vec<String> = lock(&session.subscribed)
                    .iter()
                    .filter(|(_, of)| of.as_ref() == Some(&key))
                    .map(|(uri, _)| uri.clone())
                    .collect();
                for uri in uris {
                    session.resource_updated(uri).await;
                }
            }
            Listeners::tell_moved(listening).await;
        });
    }

    /// The kept sessions still open.
    pub(crate) fn open_sessions(&self) -> Vec<Arc<ConnectionState>> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|session| session.strong_count() > 0);
        sessions.iter().filter_map(std::sync::Weak::upgrade).collect()
    }
}

impl ConnectionState {
    /// Tells the client `uri` changed, if it subscribed to it.
    pub(crate) async fn resource_updated(&self, uri: String) {
        if !lock(&self.subscribed).contains_key(&uri) {
            return;
        }
        let Some(peer) = self.peer.get() else { return };
        let updated = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
        if let Err(error) = peer.notify_resource_updated(updated).await {
            tracing::debug!(%error, "a subscribed session could not be told a resource changed");
        }
    }

    /// Sends the client `notification` (a list changed), if it is a session with a client.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        let Some(peer) = self.peer.get() else { return };
        if let Err(error) = peer.send_notification(notification).await {
            tracing::debug!(%error, "a session could not be told a list changed");
        }
    }
}

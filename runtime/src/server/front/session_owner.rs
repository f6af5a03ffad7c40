//! Who owns a session, checked once, at the front, for every message that names one.
//!
//! A session id is not a credential: it travels in a header, in logs and proxies, and
//! whoever holds it must not act in it. The session is recorded as its opener's when it
//! initializes ([`SessionOwners::opened`], from the principal the `initialize` request
//! authenticated as); then every request that carries its `Mcp-Session-Id` — requests,
//! notifications (`notifications/cancelled`), responses to the server's own requests
//! (`elicitation/create`), on POST, GET and DELETE — is checked here, before the owned
//! path or rmcp sees it. A caller who is not the owner (another principal, or nobody) is
//! answered exactly what an unknown session is answered, because its request goes on
//! naming a session that cannot exist: no handler method checks again, and no reply can
//! tell a stranger's session from a closed one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_server::session::SessionId;

use crate::auth::Principal;

/// The session id a stranger's request is given instead of the one it named: never
/// minted (rmcp's ids are UUIDs), so it is answered as an unknown session.
const NO_SESSION: &str = "toolgate-no-such-session";

/// Each live session's owner: the digest of the principal that opened it (`None`: opened
/// without credentials, on a server that has no authenticator or does not require one).
#[derive(Debug, Default)]
pub(crate) struct SessionOwners {
    owners: Mutex<HashMap<SessionId, Option<String>>>,
}

impl SessionOwners {
    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Option<String>>> {
        self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session `id` was opened by `opener`. Sessions that ended without saying so
    /// (closed idle) are dropped once the table outgrows the live ones.
    pub(crate) fn opened(&self, id: &SessionId, opener: Option<&Principal>, live: impl Fn(&SessionId) -> bool) {
        let mut owners = self.owners();
        owners.insert(id.clone(), opener.map(Principal::digest));
        if owners.len() > 64 && owners.len().is_power_of_two() {
            owners.retain(|id, _| live(id));
        }
    }

    /// The session `id` ended.
    pub(crate) fn closed(&self, id: &SessionId) {
        self.owners().remove(id);
    }

    /// Whether `id` is a session someone other than `caller` opened.
    fn belongs_to_another(&self, id: &str, caller: Option<&Principal>) -> bool {
        match self.owners().get(id) {
            Some(owner) => owner.as_deref() != caller.map(Principal::digest).as_deref(),
            None => false,
        }
    }
}

/// The layer: a request naming a session its caller does not own goes on naming none
/// that exists. It runs after authentication (the caller is known) and before the JSON
/// check, the owned path and rmcp. A plain tower layer: a check of headers and one map
/// look-up, no future boxed per request.
#[derive(Debug, Clone)]
pub(crate) struct SessionOwnerLayer(pub(crate) Arc<SessionOwners>);

impl<S> tower::Layer<S> for SessionOwnerLayer {
    type Service = CheckSessionOwner<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CheckSessionOwner { owners: self.0.clone(), inner }
    }
}

/// [`SessionOwnerLayer`]'s service.
#[derive(Debug, Clone)]
pub(crate) struct CheckSessionOwner<S> {
    owners: Arc<SessionOwners>,
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for CheckSessionOwner<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let caller = request.extensions().get::<Principal>();
        // Every value, should the header be repeated: whichever one rmcp reads is checked.
        let stranger = request
            .headers()
            .get_all(SESSION_ID)
            .iter()
            .any(|value| value.to_str().map_or(true, |id| self.owners.belongs_to_another(id, caller)));
        if stranger {
            tracing::warn!("refused a request on a session another principal opened");
            request.headers_mut().insert(SESSION_ID, http::HeaderValue::from_static(NO_SESSION));
        }
        self.inner.call(request)
    }
}

/// The session header (matched case-insensitively, as HTTP header names are).
const SESSION_ID: &str = "mcp-session-id";

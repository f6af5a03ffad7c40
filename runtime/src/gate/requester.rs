//! [`Requester`]: who is calling and from where, as a rate limit counts it.

use crate::auth::Principal;
use crate::store::StoreKey;

/// Who is calling: the principal, when the request authenticated, and where from. A rate
/// limit counted `per client` counts the principal when there is one, else the peer. Its
/// text is made only when a limit counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requester {
    pub(crate) principal: Option<Principal>,
    pub(crate) peer: Peer,
}

/// Where a call comes from, as the transport reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A client known by its network address, as the socket reports it.
    Address(std::net::IpAddr),
    /// A client known by the one connection it holds (stdio, or an HTTP server mounted
    /// without connection info).
    Connection(StoreKey),
    /// A sessionless request whose address the server was not told: all such requests
    /// share one allowance, which is why `Server::serve_http` always records addresses.
    Unidentified,
}

impl Requester {
    /// The key its allowance is counted under.
    pub(super) fn key(&self) -> std::borrow::Cow<'_, str> {
        if let Some(principal) = &self.principal {
            // Quoted: no subject or tenant can spell another's key.
            return format!("principal:{}", principal.key()).into();
        }
        match &self.peer {
            Peer::Address(ip) => format!("address:{ip}").into(),
            Peer::Connection(key) => key.to_string().into(),
            Peer::Unidentified => "unidentified".into(),
        }
    }
}

//! [`Authenticator`]: credentials in, a [`Principal`] out; [`StaticTokens`], a table of
//! bearer tokens.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use sha2::{Digest, Sha256};

use super::Principal;

/// Why credentials were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The token is unknown, malformed, expired or not for this server. The reason goes
    /// to the client (`WWW-Authenticate: error_description`), so it must not echo the
    /// token.
    #[error("invalid token: {0}")]
    InvalidToken(String),
    /// The authenticator could not decide now (a key set could not be fetched, say).
    #[error("authentication is unavailable: {0}")]
    Unavailable(String),
}

/// The future an [`Authenticator`] returns.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthError>> + Send + 'a>>;

/// Resolves the bearer token a request presents to the principal it stands for. The
/// server calls it once per HTTP request that carries `Authorization: Bearer …`.
///
/// Implement it to plug in your own identity system; [`StaticTokens`] is a table of
/// tokens.
pub trait Authenticator: Send + Sync + 'static {
    /// The principal `token` stands for, or why it is refused. The token is a secret:
    /// never log it, never put it in an error.
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a>;
}

/// A fixed table of bearer tokens, each standing for one principal: for development, for
/// tests, and for service accounts.
///
/// Tokens are kept only as SHA-256 digests, and a presented token is looked up by its
/// digest: the lookup's timing depends on the digest, which tells an attacker nothing
/// about any stored token.
///
/// ```
/// use toolgate_runtime::{Principal, StaticTokens};
/// let tokens = StaticTokens::new()
///     .token("s3cret", Principal::new("clerk").with_scopes(["payments:capture"]))
///     .token("t0ken", Principal::new("auditor"));
/// assert_eq!(tokens.len(), 2);
/// ```
#[derive(Default, Clone)]
pub struct StaticTokens {
    by_digest: HashMap<[u8; 32], Principal>,
}

impl StaticTokens {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The table with `secret` standing for `principal` (replacing what it stood for).
    pub fn token(mut self, secret: impl AsRef<[u8]>, principal: Principal) -> Self {
        self.by_digest.insert(digest(secret.as_ref()), principal);
        self
    }

    /// How many tokens it holds.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }
}

fn digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        let found = self.by_digest.get(&digest(token.as_bytes())).cloned();
        Box::pin(async move { found.ok_or_else(|| AuthError::InvalidToken("unknown token".into())) })
    }
}

/// Shows how many tokens, never a digest.
impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens").field("tokens", &self.by_digest.len()).finish()
    }
}

/// Two authenticators: a token the first refuses as invalid is given to the second.
pub(crate) struct FirstOf(pub(crate) std::sync::Arc<dyn Authenticator>, pub(crate) std::sync::Arc<dyn Authenticator>);

impl Authenticator for FirstOf {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(async move {
            match self.0.authenticate(token).await {
                Err(AuthError::InvalidToken(_)) => self.1.authenticate(token).await,
                decided => decided,
            }
        })
    }
}

//! [`Authenticator`]: credentials in, a [`Principal`] out; [`StaticTokens`], a table of
//! bearer tokens; [`Roster`], the principals an authenticator can stand for (what the audit
//! checks the tools' scopes against).

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

    /// The principals it can stand for, as far as it can list them: the audit checks that
    /// some principal holds the scopes each tool requires. The default says it cannot
    /// list them ([`Roster::open`]: an outside issuer decides, as for JWTs); a table of
    /// tokens lists its principals.
    fn roster(&self) -> Roster {
        Roster::open()
    }
}

/// The principals a deployment can serve, as far as it knows them: those listed (a table
/// of tokens, the stdio principal), and whether others may come from an issuer that cannot
/// be listed (a JWT issuer, an authenticator of your own).
///
/// ```
/// use toolgate_runtime::{Authenticator, Principal, Roster, StaticTokens};
/// let tokens = StaticTokens::new().token("s3cret", Principal::new("clerk").with_scopes(["payments:capture"]));
/// let roster = tokens.roster();
/// assert_eq!(roster.listed().len(), 1);
/// assert!(!roster.is_open());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Roster {
    listed: Vec<Principal>,
    open: bool,
}

impl Roster {
    /// No principal at all.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Principals the server cannot list: any scope may be held.
    pub fn open() -> Self {
        Self { listed: Vec::new(), open: true }
    }

    /// Exactly `principals`.
    pub fn of(principals: impl IntoIterator<Item = Principal>) -> Self {
        Self { listed: principals.into_iter().collect(), open: false }
    }

    /// The principals of both.
    pub fn and(mut self, other: Roster) -> Self {
        self.listed.extend(other.listed);
        self.open |= other.open;
        self
    }

    /// The principals it lists.
    pub fn listed(&self) -> &[Principal] {
        &self.listed
    }

    /// Whether principals it does not list may call too.
    pub fn is_open(&self) -> bool {
        self.open
    }
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

    fn roster(&self) -> Roster {
        let mut principals: Vec<Principal> = self.by_digest.values().cloned().collect();
        // The table's order is its hash's; a report lists them by name.
        principals.sort_by(|a, b| a.subject().cmp(b.subject()));
        Roster::of(principals)
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

    fn roster(&self) -> Roster {
        self.0.roster().and(self.1.roster())
    }
}

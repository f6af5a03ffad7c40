//! [`Principal`]: who is calling, as the server's authenticator established it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

/// Who is calling: the subject an [`Authenticator`](super::Authenticator) resolved from the
/// credentials the request presented (never from anything the model wrote), with the
/// tenant it belongs to, the scopes it was granted and the claims that came with it.
///
/// A handler receives it like [`State<T>`](crate::State): take `Principal` when the tool
/// needs one (a call without one is refused with `UNAUTHENTICATED` before the handler
/// runs), or `Option<Principal>` when it is optional. Cloning is cheap.
///
/// ```
/// use toolgate_runtime::Principal;
/// let clerk = Principal::new("clerk").with_tenant("acme").with_scopes(["payments:capture"]);
/// assert!(clerk.has_scope("payments:capture"));
/// assert_eq!(clerk.tenant(), Some("acme"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Principal(Arc<Identity>);

#[derive(Clone, PartialEq, Eq)]
struct Identity {
    subject: String,
    tenant: Option<String>,
    scopes: BTreeSet<String>,
    claims: Map<String, Value>,
}

impl Principal {
    /// A principal known by `subject`, in no tenant, with no scopes.
    pub fn new(subject: impl Into<String>) -> Self {
        Self(Arc::new(Identity { subject: subject.into(), tenant: None, scopes: BTreeSet::new(), claims: Map::new() }))
    }

    /// The same principal in `tenant`.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).tenant = Some(tenant.into());
        self
    }

    /// The same principal with `scopes` granted too.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Arc::make_mut(&mut self.0).scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The same principal carrying `claims` (a token's, say).
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        Arc::make_mut(&mut self.0).claims = claims;
        self
    }

    /// Who it is (`clerk`, a token's `sub`).
    pub fn subject(&self) -> &str {
        &self.0.subject
    }

    /// The tenant it belongs to, if the server has tenants.
    pub fn tenant(&self) -> Option<&str> {
        self.0.tenant.as_deref()
    }

    /// The scopes it was granted.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.0.scopes.iter().map(String::as_str)
    }

    /// Whether it was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.0.scopes.contains(scope)
    }

    /// The claims that came with its credentials.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.0.claims
    }

    /// Who it is, as one unambiguous string: tenant and subject, quoted.
    pub(crate) fn key(&self) -> String {
        format!("{:?}:{:?}", self.tenant(), self.subject())
    }

    /// A digest of [`Principal::key`] that names the principal without revealing it (what a
    /// state handle carries): 128 bits of SHA-256, hex.
    pub(crate) fn digest(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.key().as_bytes());
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Who owns a record, as the record keeps it: a digest (128 bits of SHA-256) of its
    /// tenant and subject. The one encoding of ownership — an owned instance's owner (what
    /// a transactional hook is told, [`Moved::owner`](crate::Moved::owner)), an MCP
    /// task's — so that a record never holds the subject or the tenant in clear.
    pub fn owner_id(&self) -> String {
        self.digest()
    }

    /// Whether `recorded` (a record's owner, [`Principal::owner_id`]) names this principal.
    /// Always the same work, whatever it holds: the digest computed and every byte
    /// compared, so that how long the answer takes tells nothing of whose record it is.
    pub(crate) fn owns(&self, recorded: Option<&str>) -> bool {
        let mine = self.owner_id();
        let theirs = recorded.unwrap_or_default().as_bytes();
        let mut differ = u8::from(mine.len() != theirs.len() || recorded.is_none());
        for (index, byte) in mine.bytes().enumerate() {
            differ |= byte ^ theirs.get(index).copied().unwrap_or(0);
        }
        differ == 0
    }

    /// The first of `required` it was not granted.
    pub(crate) fn missing_scope<'s>(&self, required: &[&'s str]) -> Option<&'s str> {
        required.iter().copied().find(|scope| !self.has_scope(scope))
    }
}

/// Shows who, never the credentials (a principal holds none) nor the claims' values.
impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.0.subject)
            .field("tenant", &self.0.tenant)
            .field("scopes", &self.0.scopes)
            .finish_non_exhaustive()
    }
}

//! [`JwtAuthenticator`]: bearer tokens that are JWTs (RFC 7519), checked for their
//! signature (HS256 with a shared secret, RS256 and ES256 with public keys from
//! configuration or from a JWKS URL), issuer, audience, expiry and not-before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value};

use super::{AuthError, AuthFuture, Authenticator, Principal};

/// How long fetched JWKS keys are used before they are fetched again.
const JWKS_REFRESH: Duration = Duration::from_secs(5 * 60);

/// The least time between two fetches of the JWKS (a token naming an unknown key makes
/// the authenticator fetch again, at most this often).
const JWKS_MIN_REFETCH: Duration = Duration::from_secs(30);

/// Checks bearer tokens that are JWTs and turns their claims into a [`Principal`]: `sub` is
/// the subject, the tenant claim (`tenant` unless [`tenant_claim`](Self::tenant_claim)
/// says otherwise) the tenant, and `scope` (space-separated) or `scp` (a list) the scopes.
///
/// Every token must carry `iss` equal to the issuer, `aud` naming the audience (this
/// server's resource identifier), an `exp` in the future and, if it has one, an `nbf` in
/// the past (with [`leeway`](Self::leeway) for clock skew, 30 s by default); its signature
/// must verify with a key of the expected algorithm — a token cannot pick its own
/// algorithm, so an RS256 key never verifies an HS256 token.
///
/// ```
/// use toolgate_runtime::JwtAuthenticator;
/// let jwt = JwtAuthenticator::hs256("https://issuer.example", "https://mcp.example/mcp", b"a-shared-secret-of-32-bytes-or-more")
///     .unwrap()
///     .tenant_claim("org_id");
/// ```
#[derive(Clone)]
pub struct JwtAuthenticator {
    issuer: String,
    audience: String,
    keys: Arc<Keys>,
    tenant_claim: String,
    leeway: Duration,
}

/// Where verification keys come from.
enum Keys {
    /// Configured: `(kid, algorithm, key)`; a key without a kid verifies any token of its
    /// algorithm.
    Fixed(Vec<(Option<String>, Algorithm, DecodingKey)>),
    /// Fetched from a JWKS URL, cached.
    Jwks(JwksCache),
}

/// The JWKS keys last fetched.
struct JwksCache {
    url: String,
    client: reqwest::Client,
    state: tokio::sync::Mutex<JwksState>,
}

#[derive(Default)]
struct JwksState {
    keys: Vec<(Option<String>, Algorithm, DecodingKey)>,
    fetched_at: Option<Instant>,
}

impl JwtAuthenticator {
    fn new(issuer: impl Into<String>, audience: impl Into<String>, keys: Keys) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            keys: Arc::new(keys),
            tenant_claim: "tenant".into(),
            leeway: Duration::from_secs(30),
        }
    }

    /// Tokens signed with HS256 and `secret` (shared with the issuer; at least 32 bytes).
    pub fn hs256(issuer: impl Into<String>, audience: impl Into<String>, secret: &[u8]) -> Result<Self, AuthError> {
        if secret.len() < 32 {
            return Err(AuthError::Unavailable(format!(
                "an HS256 secret needs 32 bytes or more; this one has {}",
                secret.len()
            )));
        }
        let key = DecodingKey::from_secret(secret)
            .map_err(|e| AuthError::Unavailable(format!("not a usable secret: {e}")))?;
        Ok(Self::new(issuer, audience, Keys::Fixed(vec![(None, Algorithm::HS256, key)])))
    }

    /// Tokens signed with RS256, verified with the RSA public key in `pem`.
    pub fn rs256_pem(issuer: impl Into<String>, audience: impl Into<String>, pem: &[u8]) -> Result<Self, AuthError> {
        let key = DecodingKey::from_rsa_pem(pem)
            .map_err(|e| AuthError::Unavailable(format!("not an RSA public key: {e}")))?;
        Ok(Self::new(issuer, audience, Keys::Fixed(vec![(None, Algorithm::RS256, key)])))
    }

    /// Tokens signed with ES256, verified with the P-256 public key in `pem`.
    pub fn es256_pem(issuer: impl Into<String>, audience: impl Into<String>, pem: &[u8]) -> Result<Self, AuthError> {
        let key =
            DecodingKey::from_ec_pem(pem).map_err(|e| AuthError::Unavailable(format!("not an EC public key: {e}")))?;
        Ok(Self::new(issuer, audience, Keys::Fixed(vec![(None, Algorithm::ES256, key)])))
    }

    /// Tokens signed with the RS256 or ES256 keys the issuer publishes at `url` (its JWKS),
    /// fetched when first needed, again every 5 minutes, and when a token names a key not
    /// seen yet (at most every 30 seconds).
    pub fn jwks(issuer: impl Into<String>, audience: impl Into<String>, url: impl Into<String>) -> Self {
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        let cache = JwksCache { url: url.into(), client, state: tokio::sync::Mutex::default() };
        Self::new(issuer, audience, Keys::Jwks(cache))
    }

    /// The claim that names the principal's tenant (`tenant` by default).
    pub fn tenant_claim(mut self, claim: impl Into<String>) -> Self {
        self.tenant_claim = claim.into();
        self
    }

    /// How much clock skew `exp` and `nbf` tolerate (30 s by default).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |reason: &str| AuthError::InvalidToken(reason.to_string());
        let header = decode_header(token).map_err(|_| invalid("not a JWT"))?;
        let (algorithm, key) = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let data = decode::<Map<String, Value>>(token, &key, &validation).map_err(|error| {
            use jsonwebtoken::errors::ErrorKind;
            let reason = match error.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
                ErrorKind::InvalidIssuer => "the token was issued by another issuer",
                ErrorKind::InvalidAudience => "the token is for another audience",
                ErrorKind::InvalidSignature => "the token's signature does not verify",
                ErrorKind::InvalidAlgorithm => "the token's algorithm is not accepted",
                ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud, sub)",
                _ => "the token is malformed",
            };
            invalid(reason)
        })?;
        self.principal(data.claims)
    }

    /// The key and algorithm a token's header selects: the algorithm is the key's, never
    /// the token's choice.
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<(Algorithm, DecodingKey), AuthError> {
        let pick = |keys: &[(Option<String>, Algorithm, DecodingKey)]| {
            keys.iter()
                .find(|(key_id, key_alg, _)| *key_alg == alg && (key_id.is_none() || key_id.as_deref() == kid))
                .map(|(_, key_alg, key)| (*key_alg, key.clone()))
        };
        let unknown = || AuthError::InvalidToken("the token's key or algorithm is not accepted".into());
        match &*self.keys {
            Keys::Fixed(keys) => pick(keys).ok_or_else(unknown),
            Keys::Jwks(cache) => {
                let mut state = cache.state.lock().await;
                let stale = state.fetched_at.is_none_or(|at| at.elapsed() >= JWKS_REFRESH);
                if stale {
                    cache.refresh(&mut state).await?;
                }
                if let Some(found) = pick(&state.keys) {
                    return Ok(found);
                }
                // A key not seen yet: the issuer may have rotated. Fetch again, not too often.
                if state.fetched_at.is_some_and(|at| at.elapsed() >= JWKS_MIN_REFETCH) {
                    cache.refresh(&mut state).await?;
                }
                pick(&state.keys).ok_or_else(unknown)
            }
        }
    }

    fn principal(&self, claims: Map<String, Value>) -> Result<Principal, AuthError> {
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| AuthError::InvalidToken("the token has no subject".into()))?
            .to_string();
        let mut scopes: Vec<String> = Vec::new();
        if let Some(Value::String(scope)) = claims.get("scope") {
            scopes.extend(scope.split_whitespace().map(str::to_string));
        }
        match claims.get("scp") {
            Some(Value::Array(list)) => scopes.extend(list.iter().filter_map(Value::as_str).map(str::to_string)),
            Some(Value::String(scope)) => scopes.extend(scope.split_whitespace().map(str::to_string)),
            _ => {}
        }
        // A tenant claim that is there but names no tenant (a number, a list, `""`, null)
        // refuses the token: served as "no tenant", it would share the default tenant's
        // instances with every principal that has none.
        let tenant = match claims.get(&self.tenant_claim) {
            None => None,
            Some(Value::String(tenant)) if !tenant.trim().is_empty() => Some(tenant.clone()),
            Some(_) => {
                return Err(AuthError::InvalidToken(format!(
                    "the `{}` claim must be a non-empty string naming the tenant",
                    self.tenant_claim
                )));
            }
        };
        let mut principal = Principal::new(subject).with_scopes(scopes).with_claims(claims);
        if let Some(tenant) = tenant {
            principal = principal.with_tenant(tenant);
        }
        Ok(principal)
    }
}

impl JwksCache {
    /// Fetches the key set; on failure keeps the keys it had (if any).
    async fn refresh(&self, state: &mut JwksState) -> Result<(), AuthError> {
        let fetched = async {
            let response = self.client.get(&self.url).send().await.map_err(|e| e.without_url().to_string())?;
            if !response.status().is_success() {
                return Err(format!("the JWKS URL answered {}", response.status()));
            }
            response.json::<JwkSet>().await.map_err(|e| format!("not a JWKS: {}", e.without_url()))
        };
        match fetched.await {
            Ok(set) => {
                state.keys = set
                    .keys
                    .iter()
                    .filter_map(|jwk| {
                        let algorithm = match &jwk.algorithm {
                            AlgorithmParameters::RSA(_) => Algorithm::RS256,
                            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                                Algorithm::ES256
                            }
                            _ => return None,
                        };
                        let key = DecodingKey::from_jwk(jwk).ok()?;
                        Some((jwk.common.key_id.clone(), algorithm, key))
                    })
                    .collect();
                state.fetched_at = Some(Instant::now());
                Ok(())
            }
            Err(problem) => {
                tracing::warn!(url = %self.url, %problem, "cannot fetch the JWKS");
                // Not again at once: the next attempt waits like a refresh would.
                state.fetched_at = Some(Instant::now());
                if state.keys.is_empty() {
                    Err(AuthError::Unavailable("the issuer's keys cannot be fetched".into()))
                } else {
                    Ok(())
                }
            }
        }
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(self.verify(token))
    }
}

/// Shows the issuer and audience, never a key.
impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("tenant_claim", &self.tenant_claim)
            .finish_non_exhaustive()
    }
}

//! Letting an operator in (`operator_only`: a bearer token, or a console session), and
//! signing in to the console, and out: the sign-in form exchanges an operator's token for
//! a console session, and the browser carries the session, never the credential.
//!
//! - **The session lives in the store** (`console-session:<digest of its id>`), so any
//!   replica sharing the store serves it behind a load balancer, and signing out on one
//!   ends it on all. The cookie holds 256 random bits; the store holds their digest, so a
//!   copy of the store signs no one in. A session ends after [`SESSION_TTL`], and never
//!   after the operator's token does (a JWT's `exp`).
//! - **The cookie** is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's
//!   request carries it), has an expiry (`Max-Age`), and is `Secure` when the browser
//!   signed in over HTTPS (its `Origin` says so).
//! - **Only the console's own page signs in or out**: a `POST` whose `Origin` is another
//!   site's (or whose `Sec-Fetch-Site` says it is cross-site) is refused, so another site
//!   cannot switch a browser to a console session of its choosing.
//! - **Failed sign-ins are limited per address** ([`SIGN_IN_ATTEMPTS`]): past them every
//!   sign-in from that address gets 429 with `Retry-After` until the window moves on.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequest, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::access::{OPERATOR_SCOPE, bearer_of, judge, login_page};
use crate::action::{RateLimit, RatePer};
use crate::auth::{Authenticator, Principal};
use crate::gate::{Limiter, OverLimit};
use crate::store::{FlowStore, Snapshot, StoreKey, now_ms};

/// The cookie that carries a console session's id.
const COOKIE: &str = "toolgate_console";

/// How long a console session lasts, at most.
pub(super) const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);

/// Sign-in attempts one address may make, successful ones given back: past them, 429.
pub(super) const SIGN_IN_ATTEMPTS: RateLimit = RateLimit { calls: 10, per_ms: 60_000, per: RatePer::Client };

/// What signing in and out needs: who may sign in, where sessions live, and the count of
/// attempts per address.
pub(crate) struct SignIn {
    pub(super) authenticator: Arc<dyn Authenticator>,
    pub(super) store: Arc<dyn FlowStore>,
    attempts: Limiter,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn").finish_non_exhaustive()
    }
}

/// What the store keeps of a session: who signed in.
#[derive(Serialize, Deserialize)]
struct Session {
    subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
    scopes: Vec<String>,
}

/// The sign-in form's fields.
#[derive(Deserialize)]
pub(super) struct LoginForm {
    token: String,
}

impl SignIn {
    pub(super) fn new(authenticator: Arc<dyn Authenticator>, store: Arc<dyn FlowStore>) -> Self {
        Self { authenticator, store, attempts: Limiter::new(SIGN_IN_ATTEMPTS) }
    }

    /// The operator whose session `headers`' cookie names, if it is live. `Err`: the store
    /// cannot answer (503).
    pub(super) async fn operator_of(&self, headers: &HeaderMap) -> Result<Option<Principal>, Response> {
        let Some(id) = session_id(headers) else { return Ok(None) };
        let snapshot = self.store.load(&key_of(&id)).await.map_err(|_| store_unavailable())?;
        let session = snapshot
            .record
            .as_ref()
            .filter(|_| snapshot.version > 0 && !snapshot.is_expired(now_ms()))
            .and_then(|record| serde_json::from_value::<Session>(record.clone()).ok());
        Ok(session.map(|session| {
            let principal = Principal::new(session.subject).with_scopes(session.scopes);
            match session.tenant {
                Some(tenant) => principal.with_tenant(tenant),
                None => principal,
            }
        }))
    }
}

/// Lets a request through only for an operator; puts the principal in its extensions.
pub(super) async fn operator_only(State(sign_in): State<Arc<SignIn>>, mut request: Request, next: Next) -> Response {
    let principal = match bearer_of(request.headers()) {
        Some(token) => judge(sign_in.authenticator.as_ref(), &token).await,
        None => match sign_in.operator_of(request.headers()).await {
            // A session is opened for operators only; the scope is checked again all the same.
            Ok(Some(principal)) if principal.has_scope(OPERATOR_SCOPE) => Ok(principal),
            Ok(_) => Err(login_page(StatusCode::UNAUTHORIZED, None)),
            Err(unavailable) => Err(unavailable),
        },
    };
    match principal {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// `POST /login` with a form's `token`: an operator's opens a console session, whose id
/// the cookie carries.
pub(super) async fn login(State(sign_in): State<Arc<SignIn>>, request: Request) -> Response {
    if let Some(refused) = cross_site(request.headers()) {
        return refused;
    }
    let secure = over_https(request.headers());
    // The peer's address as the socket reports it (no header is trusted for it); a router
    // served without connect info counts every sign-in as one address's.
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(peer)| peer.ip().to_string());
    let spent = match sign_in.attempts.spend(peer.as_deref().unwrap_or("one client")) {
        Ok(spent) => spent,
        Err(OverLimit { retry_after_ms }) => return too_many_attempts(retry_after_ms),
    };
    let Ok(axum::Form(form)) = axum::Form::<LoginForm>::from_request(request, &()).await else {
        return login_page(StatusCode::BAD_REQUEST, Some("the form was not sent as a form with a token"));
    };
    let principal = match judge(sign_in.authenticator.as_ref(), &form.token).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let now = now_ms();
    let expires_at_ms = session_expiry(now, &principal);
    if expires_at_ms <= now {
        return login_page(StatusCode::UNAUTHORIZED, Some("the token is not accepted"));
    }
    let session = Session {
        subject: principal.subject().to_string(),
        tenant: principal.tenant().map(str::to_string),
        scopes: principal.scopes().map(str::to_string).collect(),
    };
    let record = Snapshot {
        expires_at_ms: Some(expires_at_ms),
        record: Some(serde_json::to_value(&session).expect("a session serializes")),
        ..Snapshot::default().next()
    };
    let id = fresh_session_id();
    if sign_in.store.commit(&key_of(&id), 0, &record, None, None).await.is_err() {
        return store_unavailable();
    }
    spent.refund().await;
    let max_age = (expires_at_ms - now) / 1_000;
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}");
    with_cookie(Redirect::to("/").into_response(), &cookie)
}

/// `POST /logout`: the session ends (on every replica: it leaves the store) and the
/// browser forgets its cookie.
pub(super) async fn logout(State(sign_in): State<Arc<SignIn>>, request: Request) -> Response {
    if let Some(refused) = cross_site(request.headers()) {
        return refused;
    }
    if let Some(id) = session_id(request.headers())
        && sign_in.store.remove(&key_of(&id)).await.is_err()
    {
        return store_unavailable();
    }
    let secure = if over_https(request.headers()) { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
    with_cookie(Redirect::to("/").into_response(), &cookie)
}

/// When a session opened at `now` for `principal` ends: after [`SESSION_TTL`], or when its
/// token does (`exp`, in seconds, as a JWT says), whichever comes first.
fn session_expiry(now: u64, principal: &Principal) -> u64 {
    let ttl = now + SESSION_TTL.as_millis() as u64;
    match principal.claims().get("exp").and_then(serde_json::Value::as_u64) {
        Some(exp) => ttl.min(exp.saturating_mul(1_000)),
        None => ttl,
    }
}

/// The answer to a sign-in or sign-out another site's page sent, if this is one: the
/// `Origin` names another host than the one the request was sent to, or the browser says
/// the request is cross-site (`Sec-Fetch-Site`, which browsers send beside an opaque
/// `Origin: null`). A request with neither header comes from no browser (curl, a script),
/// which no other site can make on the operator's behalf; an opaque origin with nothing to
/// tell where it came from (a sandboxed frame of an older browser) is refused.
fn cross_site(headers: &HeaderMap) -> Option<Response> {
    let header = |name| headers.get(name).and_then(|value: &HeaderValue| value.to_str().ok());
    let site = header(http::HeaderName::from_static("sec-fetch-site"));
    let refused = match header(http::header::ORIGIN) {
        Some(origin) if origin != "null" => {
            let authority = origin.split_once("://").map(|(_, authority)| authority);
            let host = header(http::header::HOST);
            !matches!((authority, host), (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host))
        }
        Some(_opaque) => site != Some("same-origin"),
        None => site.is_some_and(|site| !matches!(site, "same-origin" | "none")),
    };
    refused.then(|| login_page(StatusCode::FORBIDDEN, Some("sign in from the console's own page")))
}

/// Whether the browser sent this from an HTTPS page (a TLS-terminating proxy in front):
/// its cookie is then `Secure`.
fn over_https(headers: &HeaderMap) -> bool {
    headers.get(http::header::ORIGIN).and_then(|value| value.to_str().ok()).is_some_and(|o| o.starts_with("https://"))
}

/// The session id the request's cookie carries.
fn session_id(headers: &HeaderMap) -> Option<String> {
    let cookies = headers.get_all(http::header::COOKIE).iter().filter_map(|value| value.to_str().ok());
    cookies
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|value| value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Where the session `id` lives: under its digest.
fn key_of(id: &str) -> StoreKey {
    StoreKey::console_session(&hex(&sha2::Sha256::digest(id.as_bytes())))
}

/// 256 random bits, in hex.
fn fresh_session_id() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(http::header::SET_COOKIE, value);
    }
    response
}

fn too_many_attempts(retry_after_ms: u64) -> Response {
    let seconds = retry_after_ms.div_ceil(1_000).max(1);
    let mut response = login_page(StatusCode::TOO_MANY_REQUESTS, Some("too many sign-in attempts from this address"));
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(http::header::RETRY_AFTER, value);
    }
    response
}

fn store_unavailable() -> Response {
    login_page(StatusCode::SERVICE_UNAVAILABLE, Some("the console's sessions are unavailable; try again"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_never_outlives_its_token() {
        let now = 1_700_000_000_000;
        let plain = Principal::new("olga");
        assert_eq!(session_expiry(now, &plain), now + SESSION_TTL.as_millis() as u64);
        let mut claims = serde_json::Map::new();
        claims.insert("exp".into(), serde_json::json!(now / 1_000 + 600));
        let jwt = Principal::new("olga").with_claims(claims);
        assert_eq!(session_expiry(now, &jwt), now + 600_000);
    }

    #[test]
    fn only_the_console_s_own_page_signs_in() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        let host = ("host", "127.0.0.1:9000");
        assert!(cross_site(&headers(&[host, ("origin", "http://127.0.0.1:9000")])).is_none());
        assert!(cross_site(&headers(&[host])).is_none());
        assert!(cross_site(&headers(&[host, ("sec-fetch-site", "same-origin")])).is_none());
        assert!(cross_site(&headers(&[host, ("origin", "https://evil.example")])).is_some());
        assert!(cross_site(&headers(&[host, ("origin", "null")])).is_some());
        assert!(cross_site(&headers(&[host, ("origin", "null"), ("sec-fetch-site", "cross-site")])).is_some());
        assert!(cross_site(&headers(&[host, ("origin", "null"), ("sec-fetch-site", "same-origin")])).is_none());
        assert!(cross_site(&headers(&[host, ("origin", "http://127.0.0.1:9001")])).is_some());
        assert!(cross_site(&headers(&[host, ("sec-fetch-site", "cross-site")])).is_some());
        assert!(cross_site(&headers(&[("origin", "http://127.0.0.1:9000")])).is_some());
    }
}

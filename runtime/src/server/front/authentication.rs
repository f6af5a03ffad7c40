//! The front's third layer, authentication: `Authorization: Bearer …` resolved once per
//! request, before anything that reads the session or the message, and the answers the MCP authorization specification asks
//! for when it fails (401 with `WWW-Authenticate`).

use crate::error::jsonrpc;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::metadata::ProtectedResource;
use crate::auth::{AuthError, Authenticator};
use crate::server::Shared;

/// How a server authenticates HTTP requests.
#[derive(Clone)]
pub(crate) struct HttpAuth {
    pub(crate) authenticator: Arc<dyn Authenticator>,
    /// Whether a request without credentials is refused (401) rather than served
    /// anonymously (tools that need a principal then refuse the call themselves).
    pub(crate) required: bool,
    /// The URL of the server's OAuth protected resource metadata (RFC 9728), named in
    /// every `WWW-Authenticate` challenge.
    pub(crate) resource_metadata: Option<String>,
    /// With an authorization server to step up with (protected resource metadata): the
    /// scopes each scoped tool requires, so that a `tools/call` naming one in its
    /// `Mcp-Name` header without them is answered 403 `insufficient_scope`, as the MCP
    /// authorization specification's step-up flow asks.
    pub(crate) step_up: HashMap<String, Vec<String>>,
}

impl HttpAuth {
    /// How the server `shared` authenticates, if it has an authenticator.
    pub(crate) fn of(shared: &Shared) -> Option<Self> {
        let auth = &shared.auth;
        let step_up = match &auth.metadata {
            Some(_) => shared
                .engine
                .registry
                .tools()
                .iter()
                .filter(|t| !t.scopes().is_empty())
                .map(|t| (t.name.to_string(), t.scopes().iter().map(|s| s.to_string()).collect()))
                .collect(),
            None => HashMap::new(),
        };
        Some(Self {
            authenticator: auth.authenticator.clone()?,
            required: auth.required,
            resource_metadata: auth.metadata.as_ref().map(ProtectedResource::metadata_url),
            step_up,
        })
    }
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAuth")
            .field("required", &self.required)
            .field("resource_metadata", &self.resource_metadata)
            .finish_non_exhaustive()
    }
}

/// Why a request's credentials were not accepted, as HTTP answers it.
enum Challenge {
    /// No credentials, where the server requires them.
    Missing,
    /// An `Authorization` header that is not `Bearer <token>`.
    Malformed,
    /// A bearer token the authenticator refused.
    Invalid(String),
    /// A valid token without every scope the called tool requires (step-up).
    InsufficientScope(Vec<String>),
}

/// Resolves the request's principal and puts it in the request's extensions, where the
/// call path finds it (rmcp hands the request's parts to every handler); answers 401 when
/// the credentials are refused, or missing where they are required.
pub(crate) async fn authenticate(State(auth): State<Arc<HttpAuth>>, mut request: Request, next: Next) -> Response {
    let header = request.headers().get(http::header::AUTHORIZATION);
    let step_up = step_up_scopes(&auth, request.headers());
    let token = match header.map(|value| bearer_token(value.as_bytes())) {
        None if auth.required => return unauthorized(&auth, Challenge::Missing, request).await,
        // The tool needs scopes, so a token: ask for one that has them.
        None if step_up.is_some() => return unauthorized(&auth, Challenge::Missing, request).await,
        None => return next.run(request).await,
        Some(None) => return unauthorized(&auth, Challenge::Malformed, request).await,
        Some(Some(token)) => token.to_string(),
    };
    match auth.authenticator.authenticate(&token).await {
        Ok(principal) => {
            if let Some(required) = step_up
                && required.iter().any(|scope| !principal.has_scope(scope))
            {
                return unauthorized(&auth, Challenge::InsufficientScope(required.to_vec()), request).await;
            }
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(AuthError::InvalidToken(reason)) => {
            tracing::debug!(%reason, "refused a request: its bearer token is not accepted");
            unauthorized(&auth, Challenge::Invalid(reason), request).await
        }
        Err(AuthError::Unavailable(reason)) => {
            tracing::warn!(%reason, "cannot authenticate a request now");
            let error = jsonrpc::error(-32001, "authentication is unavailable; retry later", None);
            let id = request_id(request).await;
            jsonrpc::answer(http::StatusCode::SERVICE_UNAVAILABLE, &id, &error, &[(http::header::RETRY_AFTER, "5")])
        }
    }
}

/// The scopes the tool a `tools/call` names in its `Mcp-Name` header requires, when the
/// server steps up (it has an authorization server) and the tool requires any. Requests
/// without the header (revisions before 2026-07-28) are judged by the call pipeline, which
/// answers `INSUFFICIENT_SCOPE` as a tool result.
fn step_up_scopes<'a>(auth: &'a HttpAuth, headers: &http::HeaderMap) -> Option<&'a [String]> {
    if auth.step_up.is_empty() {
        return None;
    }
    let method = headers.get("mcp-method")?.to_str().ok()?;
    if method != "tools/call" {
        return None;
    }
    let tool = headers.get("mcp-name")?.to_str().ok()?;
    auth.step_up.get(tool).map(Vec::as_slice)
}

/// The token of `Bearer <token>` (the scheme in any case, RFC 7235), or `None` for any
/// other form.
pub(crate) fn bearer_token(value: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(value).ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

/// 401 (403 for insufficient scope) with the challenge the MCP authorization
/// specification asks for: `Bearer`, the protected resource metadata's URL where there is
/// one, and the error (RFC 6750 §3).
async fn unauthorized(auth: &HttpAuth, challenge: Challenge, request: Request) -> Response {
    let mut parameters = Vec::new();
    if let Some(url) = &auth.resource_metadata {
        parameters.push(format!("resource_metadata=\"{url}\""));
    }
    let status = match challenge {
        Challenge::InsufficientScope(_) => http::StatusCode::FORBIDDEN,
        _ => http::StatusCode::UNAUTHORIZED,
    };
    let message = match &challenge {
        Challenge::Missing => "this server requires authentication: send `Authorization: Bearer <token>`".to_string(),
        Challenge::InsufficientScope(scopes) => {
            let scopes = scopes.join(" ");
            parameters.push("error=\"insufficient_scope\"".into());
            parameters.push(format!("scope=\"{scopes}\""));
            format!("this tool requires the scopes `{scopes}`: authorize again with them")
        }
        Challenge::Malformed => {
            parameters.push("error=\"invalid_request\"".into());
            "the Authorization header must be `Bearer <token>`".to_string()
        }
        Challenge::Invalid(reason) => {
            parameters.push("error=\"invalid_token\"".into());
            parameters.push(format!("error_description=\"{}\"", reason.replace(['"', '\\'], "'")));
            format!("the bearer token is not accepted: {reason}")
        }
    };
    let challenge =
        if parameters.is_empty() { "Bearer".to_string() } else { format!("Bearer {}", parameters.join(", ")) };
    let error = jsonrpc::error(-32001, message, None);
    jsonrpc::answer(status, &request_id(request).await, &error, &[(http::header::WWW_AUTHENTICATE, &challenge)])
}

/// The largest body a refused request is read for, to echo its id.
const ECHOED_BODY_BYTES: usize = 64 * 1024;

/// How long a refused request's body may take to arrive, to echo its id.
const ECHOED_BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The JSON-RPC id of a refused request, so that its error answers it: read from a small
/// JSON body that arrives at once, `null` otherwise (a refusal reads no more than that of
/// a request that had no credentials).
async fn request_id(request: Request) -> serde_json::Value {
    let small = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|length| length <= ECHOED_BODY_BYTES);
    if request.method() != http::Method::POST || !small {
        return serde_json::Value::Null;
    }
    let body = axum::body::to_bytes(request.into_body(), ECHOED_BODY_BYTES);
    match tokio::time::timeout(ECHOED_BODY_WAIT, body).await {
        Ok(Ok(bytes)) => id_of(&bytes),
        _ => serde_json::Value::Null,
    }
}

/// The `id` of a JSON-RPC request in `bytes` if it is one an answer can carry (a string or
/// an integer), else `null`.
fn id_of(bytes: &[u8]) -> serde_json::Value {
    #[derive(serde::Deserialize)]
    struct Request {
        id: Option<serde_json::Value>,
    }
    match serde_json::from_slice::<Request>(bytes).ok().and_then(|request| request.id) {
        Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) if !id.is_f64() => id,
        _ => serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_the_bearer_scheme() {
        assert_eq!(bearer_token(b"Bearer abc"), Some("abc"));
        assert_eq!(bearer_token(b"bearer abc"), Some("abc"));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearer a b"), None);
        assert_eq!(bearer_token(b"Bearer"), None);
    }
}

//! Who may see the console: a principal with the operator scope ([`OPERATOR_SCOPE`]), named
//! by a bearer token (`Authorization: Bearer …`, judged here) or by the console session the
//! sign-in form opened (`session.rs`, which lets requests in). No credentials: 401 and the
//! sign-in form. Credentials of someone else: 403.

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::auth::{AuthError, Authenticator, Principal};

/// The scope a principal needs to see the console.
pub const OPERATOR_SCOPE: &str = "toolgate:operator";

/// The principal `token` names, if it is an operator's; else the answer: 401 for a token
/// not accepted, 403 for a principal without the operator scope, 503 when the
/// authenticator cannot answer now.
pub(super) async fn judge(authenticator: &dyn Authenticator, token: &str) -> Result<Principal, Response> {
    match authenticator.authenticate(token).await {
        Ok(principal) if principal.has_scope(OPERATOR_SCOPE) => Ok(principal),
        Ok(_) => Err(login_page(StatusCode::FORBIDDEN, Some("this principal is not an operator"))),
        Err(AuthError::InvalidToken(_)) => Err(login_page(StatusCode::UNAUTHORIZED, Some("the token is not accepted"))),
        Err(AuthError::Unavailable(_)) => {
            Err(login_page(StatusCode::SERVICE_UNAVAILABLE, Some("authentication is unavailable; try again")))
        }
    }
}

/// The request's bearer token.
pub(super) fn bearer_of(headers: &http::HeaderMap) -> Option<String> {
    let bearer = headers.get(http::header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    bearer.and_then(|value| value.strip_prefix("Bearer ")).map(|token| token.trim().to_string())
}

/// The sign-in form, answered with `status` and, if there is one, why the last try failed
/// (fixed texts only: nothing of the request is echoed).
pub(super) fn login_page(status: StatusCode, why: Option<&str>) -> Response {
    let why = why.map(|why| format!("<p class=\"refused\">{why}</p>")).unwrap_or_default();
    let page = super::assets::login_page(&why);
    let mut response = (status, axum::response::Html(page)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

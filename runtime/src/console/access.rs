//! Who may see the console: a principal with the operator scope, named by a bearer token
//! (`Authorization: Bearer …`) or by the cookie the login form sets. No credentials: 401 and
//! the login form. Credentials of someone else: 403.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::StatusCode;

use crate::auth::{AuthError, Authenticator, Principal};

/// The scope a principal needs to see the console.
pub const OPERATOR_SCOPE: &str = "toolgate:operator";

/// The cookie the login form sets: the operator's token, sent back only to this console
/// (`HttpOnly`, `SameSite=Strict`), for as long as the browser runs.
const COOKIE: &str = "toolgate_console";

/// Lets a request through only for an operator; puts the principal in its extensions.
pub(super) async fn operator_only(
    State(authenticator): State<Arc<dyn Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = token_of(request.headers()) else { return login_page(StatusCode::UNAUTHORIZED, None) };
    match judge(authenticator.as_ref(), &token).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// `POST /login` with a form's `token`: an operator's is set as the console's cookie.
pub(super) async fn login(
    State(authenticator): State<Arc<dyn Authenticator>>,
    axum::Form(form): axum::Form<LoginForm>,
) -> Response {
    match judge(authenticator.as_ref(), &form.token).await {
        Ok(_) => {
            let cookie = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", form.token);
            let mut response = Redirect::to("/").into_response();
            if let Ok(value) = http::HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(http::header::SET_COOKIE, value);
            }
            response
        }
        Err(refused) => refused,
    }
}

/// The login form's fields.
#[derive(serde::Deserialize)]
pub(super) struct LoginForm {
    token: String,
}

/// The principal `token` names, if it is an operator's; else the answer: 401 for a token
/// not accepted, 403 for a principal without the operator scope, 503 when the
/// authenticator cannot answer now.
async fn judge(authenticator: &dyn Authenticator, token: &str) -> Result<Principal, Response> {
    match authenticator.authenticate(token).await {
        Ok(principal) if principal.has_scope(OPERATOR_SCOPE) => Ok(principal),
        Ok(_) => Err(login_page(StatusCode::FORBIDDEN, Some("this principal is not an operator"))),
        Err(AuthError::InvalidToken(_)) => Err(login_page(StatusCode::UNAUTHORIZED, Some("the token is not accepted"))),
        Err(AuthError::Unavailable(_)) => {
            Err(login_page(StatusCode::SERVICE_UNAVAILABLE, Some("authentication is unavailable; try again")))
        }
    }
}

/// The request's token: its bearer token, else the console's cookie.
fn token_of(headers: &http::HeaderMap) -> Option<String> {
    let bearer = headers.get(http::header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    if let Some(token) = bearer.and_then(|value| value.strip_prefix("Bearer ")) {
        return Some(token.trim().to_string());
    }
    let cookies = headers.get_all(http::header::COOKIE).iter().filter_map(|value| value.to_str().ok());
    cookies
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|value| !value.is_empty())
}

/// The login form, answered with `status` and, if there is one, why the last try failed
/// (fixed texts only: nothing of the request is echoed).
fn login_page(status: StatusCode, why: Option<&str>) -> Response {
    let why = why.map(|why| format!("<p class=\"refused\">{why}</p>")).unwrap_or_default();
    let page = super::assets::login_page(&why);
    let mut response = (status, axum::response::Html(page)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

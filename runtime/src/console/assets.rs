//! The console's pages, script and style, embedded in the binary (no CDN, nothing to
//! build), and the headers every answer carries: a Content-Security-Policy that allows only
//! this console's own script and style, no framing, no sniffing, no caching.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use http::HeaderValue;

/// The page every console address shows; its script fills it in.
const INDEX: &str = include_str!("assets/index.html");
/// The login form (`<!--why-->` becomes why the last try failed), its style inline
/// ([`login_page`]).
const LOGIN: &str = include_str!("assets/login.html");
/// The login form's style: inline in its page, allowed by its hash in the policy, since
/// the stylesheet (like every address) asks for an operator first.
const LOGIN_STYLE: &str = include_str!("assets/login.css");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// Only the console's own script, style and images, and the login form's own style (by
/// its hash); no inline script, no framing.
static CONTENT_SECURITY_POLICY: std::sync::LazyLock<HeaderValue> = std::sync::LazyLock::new(|| {
    use base64::Engine;
    use sha2::Digest;
    let login_style = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(LOGIN_STYLE));
    let policy = format!(
        "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-{login_style}'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    HeaderValue::from_str(&policy).expect("a policy of ASCII")
});

/// The login form, with `notice` (markup of the console's own, never the request's) where
/// it says why the last try failed.
pub(super) fn login_page(notice: &str) -> String {
    LOGIN.replace("<!--style-->", &format!("<style>{LOGIN_STYLE}</style>")).replace("<!--why-->", notice)
}

pub(super) async fn index() -> Html<&'static str> {
    Html(INDEX)
}

pub(super) async fn script() -> Response {
    ([(http::header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

pub(super) async fn style() -> Response {
    ([(http::header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// Adds the security headers to every answer, refusals included.
pub(super) async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY.clone());
    headers.insert(http::header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(http::header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Only the console's own pages learn where a request came from: its sign-in and
    // sign-out then carry their `Origin` (under `no-referrer` a browser sends `null`), which
    // says whether the browser used HTTPS (the cookie's `Secure`).
    headers.insert(http::header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

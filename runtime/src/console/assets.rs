//! The console's pages, script and style, embedded in the binary (no CDN, nothing to
//! build), and the headers every answer carries: a Content-Security-Policy that allows only
//! this console's own script and style, no framing, no sniffing, no caching.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use http::HeaderValue;

/// The page every console address shows; its script fills it in.
const INDEX: &str = include_str!("assets/index.html");
/// The login form (`<!--why-->` becomes why the last try failed).
pub(super) const LOGIN: &str = include_str!("assets/login.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// Only the console's own script, style and images; no inline script, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

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
    headers.insert(http::header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(http::header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(http::header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(http::header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

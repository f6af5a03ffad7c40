//! The JSON-RPC errors toolgate writes itself, outside rmcp's service: what the HTTP front
//! refuses (a malformed message, a client past its rate limit, a server at a cap, a request
//! without accepted credentials), what the stdio transport refuses, and the errors of the
//! calls the owned path answers. One writer, so each has one shape —
//! `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}` (and `data` when there is
//! some), the request's id or `null` when it could not be read — and, over HTTP, is
//! `application/json`.

use axum::body::Body;
use axum::response::Response;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::ErrorData;

/// The error response answering the request whose id is `id` (its JSON text: `7`, `"a"`,
/// `null`), one line of JSON.
pub(crate) fn body(id: &str, error: &ErrorData) -> String {
    let error =
        serde_json::to_string(error).unwrap_or_else(|_| r#"{"code":-32603,"message":"Internal error"}"#.to_string());
    let mut out = String::with_capacity(error.len() + id.len() + 32);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(id);
    out.push_str(r#","error":"#);
    out.push_str(&error);
    out.push('}');
    out
}

/// An HTTP answer of `status` carrying the error response to request `id`, with
/// `headers` beside its `Content-Type` (a `Retry-After`, a `WWW-Authenticate`).
pub(crate) fn answer(
    status: http::StatusCode,
    id: &serde_json::Value,
    error: &ErrorData,
    headers: &[(HeaderName, &str)],
) -> Response {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_string());
    let mut response = Response::new(Body::from(body(&id, error)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(name.clone(), value);
        }
    }
    response
}

/// An error of `code` saying `message` (and `data`, if any).
pub(crate) fn error(code: i32, message: impl Into<String>, data: Option<serde_json::Value>) -> ErrorData {
    ErrorData::new(rmcp::model::ErrorCode(code), message.into(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shape_with_the_id_and_data_only_when_given() {
        assert_eq!(
            body("7", &error(-32600, "Invalid Request", None)),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request"}}"#
        );
        let limited = error(-32000, "too many", Some(serde_json::json!({ "retry_after_ms": 5 })));
        assert_eq!(
            body("\"a\"", &limited),
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"too many","data":{"retry_after_ms":5}}}"#
        );
        let response = answer(
            http::StatusCode::TOO_MANY_REQUESTS,
            &serde_json::Value::Null,
            &limited,
            &[(http::header::RETRY_AFTER, "1")],
        );
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()[http::header::RETRY_AFTER], "1");
    }
}

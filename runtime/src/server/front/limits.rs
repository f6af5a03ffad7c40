//! The front's second layer, after accept: a client over the server-wide per-client rate
//! limit (`ServerBuilder::client_rate_limit`) is answered 429 with `Retry-After` before
//! anything else runs — before its credentials are even looked at. And what a request past
//! one of the front's caps (sessions, listening streams) gets, whichever layer counts it:
//! 503 ([`full`]).

use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use crate::error::jsonrpc;
use crate::gate::{Limiter, OverLimit};

/// Answers a client past its limit with 429 and `Retry-After`. The client is the peer's IP
/// address as the socket reports it (no header a request carries is trusted for it); a
/// router served without connect info (`into_make_service_with_connect_info::<SocketAddr>()`)
/// counts every request as one client.
pub(crate) async fn limit_clients(State(limiter): State<Arc<Limiter>>, request: Request, next: Next) -> Response {
    let client = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map_or_else(|| "one client".to_string(), |ConnectInfo(addr)| addr.ip().to_string());
    let Err(OverLimit { retry_after_ms }) = limiter.spend(&client) else {
        return next.run(request).await;
    };
    let limit = limiter.limit().to_string();
    let limit = limit.trim_end_matches(" per client");
    let retry_after_s = retry_after_ms.div_ceil(1_000).max(1);
    tracing::debug!(%client, %limit, "refused a request: the client is over its rate limit");
    let error = jsonrpc::error(
        -32000,
        format!("too many requests from this client (at most {limit}); retry after {retry_after_s} s"),
        Some(json!({ "limit": limit, "retry_after_ms": retry_after_ms })),
    );
    let retry_after = retry_after_s.to_string();
    let headers = [(http::header::RETRY_AFTER, retry_after.as_str())];
    jsonrpc::answer(http::StatusCode::TOO_MANY_REQUESTS, &serde_json::Value::Null, &error, &headers)
}

/// 503 with `Retry-After` and a JSON-RPC error answering `id`: what a request past a cap
/// (sessions, listening streams) gets.
pub(crate) fn full(message: String, id: serde_json::Value) -> Response {
    let error = jsonrpc::error(-32000, message, None);
    jsonrpc::answer(http::StatusCode::SERVICE_UNAVAILABLE, &id, &error, &[(http::header::RETRY_AFTER, "5")])
}

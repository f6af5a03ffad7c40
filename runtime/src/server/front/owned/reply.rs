//! The owned path's replies: one call's outcome written as rmcp writes it — one JSON body,
//! or an SSE stream when messages come before the result — and a call that finishes even
//! if its client goes away.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::Stream;
use rmcp::model::{ErrorData, ServerJsonRpcMessage};
use serde_json::value::RawValue;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::engine::Reply;
use crate::error::jsonrpc;
use crate::server::Connection;
use crate::server::connection::{CallRequest, OwnedCallGuard, Served};

/// One `tools/call` the owned path serves, owning all it needs (so that, if the client
/// goes away, what is left of it can finish on its own).
pub(super) struct OwnedCall {
    pub(super) connection: Connection,
    pub(super) request: CallRequest,
    /// Of MCP 2026-07-28 (else on a session).
    pub(super) modern: bool,
    /// Registered with its session for `notifications/cancelled` while it runs.
    pub(super) _tracked: Option<OwnedCallGuard>,
}

/// How a call ended, for its response.
pub(super) type Outcome = Result<Served, ErrorData>;

impl OwnedCall {
    pub(super) async fn answer(self, id: String, cancel: CancellationToken) -> Response {
        let modern = self.modern;
        let (sink, mut caused) = unbounded_channel();
        let mut call = Finishing::new(Box::pin(self.run(sink)), cancel);
        tokio::select! {
            biased;
            outcome = &mut call => {
                let first: Vec<_> = std::iter::from_fn(|| caused.try_recv().ok()).collect();
                if call.cancelled_by_client() {
                    // MCP: a cancelled request gets no response; rmcp ends its stream without one.
                    return sse_response(Body::from(first.iter().map(message_event).collect::<String>()));
                }
                let (status, last) = respond(&id, outcome, modern);
                if first.is_empty() {
                    let mut response = json_response(last);
                    *response.status_mut() = status;
                    return response;
                }
                let events = first.iter().map(message_event).chain([sse_event(&last)]);
                sse_response(Body::from(events.collect::<String>()))
            }
            Some(first) = caused.recv() => {
                // Messages before the result: an SSE stream, the call driven by its body.
                let stream = CallEvents { first: Some(first), caused, call: Some(call), id, modern };
                sse_response(Body::from_stream(stream))
            }
        }
    }

    async fn run(self, sink: tokio::sync::mpsc::UnboundedSender<ServerJsonRpcMessage>) -> Outcome {
        let mut request = self.request;
        request.stream = Some(sink);
        let served = self.connection.serve(request).await;
        drop(self._tracked);
        served
    }
}

/// A reply that could not be written: its detail goes to the log, not to the client.
pub(super) fn internal(error: serde_json::Error) -> ErrorData {
    tracing::error!(%error, "cannot write a reply");
    ErrorData::internal_error("the reply could not be written", None)
}

/// The JSON-RPC response `id` gets for `outcome`, and its HTTP status (`modern`: of a
/// 2026-07-28 request; a session's errors travel with 200, as rmcp sends them).
pub(super) fn respond(id: &str, outcome: Outcome, modern: bool) -> (http::StatusCode, String) {
    let result = match outcome {
        Ok(Served::Reply(reply)) => result_bytes(reply, modern),
        Ok(Served::Asked(asked)) => serde_json::to_string(&asked).map_err(internal),
        Ok(Served::Task(task)) => serde_json::to_string(&task).map_err(internal),
        Err(error) => Err(error),
    };
    match result {
        Ok(result) => (http::StatusCode::OK, envelope_raw(id, "result", &result)),
        Err(error) => {
            let status = if modern { error_status(&error) } else { http::StatusCode::OK };
            (status, jsonrpc::body(id, &error))
        }
    }
}

/// The HTTP status of a 2026-07-28 request answered with `error`, as rmcp gives it: 400
/// for what the request itself lacks (a client capability, a protocol version, a header
/// that disagrees), 404 for a method this server does not have, else 200.
pub(super) fn error_status(error: &ErrorData) -> http::StatusCode {
    use rmcp::model::ErrorCode;
    match error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
        _ => http::StatusCode::OK,
    }
}

/// A call's result, its `structuredContent` serialized once and its text block written
/// from those bytes; a handler's own content blocks go through rmcp's model. `modern`: of
/// MCP 2026-07-28, which names the result's type (`resultType`); earlier revisions do not.
pub(super) fn result_bytes(reply: Reply, modern: bool) -> Result<String, ErrorData> {
    if reply.blocks.is_some() && !reply.is_error {
        let mut result = reply.into_result();
        if !modern {
            result.result_type = None;
        }
        return serde_json::to_string(&result).map_err(internal);
    }
    let structured = serde_json::to_string(&reply.content).map_err(internal)?;
    let text = serde_json::to_string(&structured).map_err(internal)?;
    let mut out = String::with_capacity(structured.len() + text.len() + 96);
    out.push_str(if modern {
        r#"{"resultType":"complete","content":[{"type":"text","text":"#
    } else {
        r#"{"content":[{"type":"text","text":"#
    });
    out.push_str(&text);
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(&structured);
    out.push_str(if reply.is_error { r#","isError":true}"# } else { r#","isError":false}"# });
    Ok(out)
}

pub(super) fn envelope(id: &RawValue, member: &str, value: &str) -> String {
    envelope_raw(id.get(), member, value)
}

pub(super) fn envelope_raw(id: &str, member: &str, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + id.len() + 32);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(id);
    out.push_str(",\"");
    out.push_str(member);
    out.push_str("\":");
    out.push_str(value);
    out.push('}');
    out
}

pub(super) fn json_response(body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

pub(super) fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    headers.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    // As rmcp's: a proxy (nginx) must pass progress on as it comes, not hold the stream.
    headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}

pub(super) fn sse_event(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// One message's SSE event.
pub(super) fn message_event(message: &ServerJsonRpcMessage) -> String {
    sse_event(&serde_json::to_string(message).unwrap_or_default())
}

pub(super) type CallFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A call that finishes even if the request's future is dropped (the client went away):
/// its cancellation is fired, and what is left of it runs on in a task of its own, so a
/// call past its handler still commits and keeps its idempotency record, as one rmcp
/// serves does.
pub(super) struct Finishing {
    pub(super) call: Option<CallFuture>,
    pub(super) cancel: CancellationToken,
}

impl Finishing {
    fn new(call: CallFuture, cancel: CancellationToken) -> Self {
        Self { call: Some(call), cancel }
    }

    /// Whether the client cancelled the call (`notifications/cancelled` on its session):
    /// while the call is polled, nothing else fires its token.
    fn cancelled_by_client(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl Future for Finishing {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let Some(call) = self.call.as_mut() else { return Poll::Pending };
        let outcome = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(outcome)
    }
}

impl Drop for Finishing {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.cancel.cancel();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(call);
            }
        }
    }
}

/// The SSE body of a call that sent messages before its result: those messages as they
/// come, then the result, the call driven by the body's polling.
pub(super) struct CallEvents {
    pub(super) first: Option<ServerJsonRpcMessage>,
    pub(super) caused: UnboundedReceiver<ServerJsonRpcMessage>,
    pub(super) call: Option<Finishing>,
    pub(super) id: String,
    pub(super) modern: bool,
}

impl Stream for CallEvents {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let event = |message: &ServerJsonRpcMessage| Some(Ok(Bytes::from(message_event(message))));
        if let Some(first) = self.first.take() {
            return Poll::Ready(event(&first));
        }
        if let Poll::Ready(Some(message)) = self.caused.poll_recv(cx) {
            return Poll::Ready(event(&message));
        }
        let Some(call) = self.call.as_mut() else { return Poll::Ready(None) };
        let outcome = std::task::ready!(Pin::new(&mut *call).poll(cx));
        let cancelled = call.cancelled_by_client();
        self.call = None;
        if cancelled {
            // No response to a cancelled request: what it sent before, then the end.
            let mut events = String::new();
            while let Ok(message) = self.caused.try_recv() {
                events.push_str(&message_event(&message));
            }
            return Poll::Ready((!events.is_empty()).then(|| Ok(Bytes::from(events))));
        }
        // What the call sent last, before its result.
        if let Ok(message) = self.caused.try_recv() {
            let (_, last) = respond(&self.id, outcome, self.modern);
            let mut events = message_event(&message);
            while let Ok(message) = self.caused.try_recv() {
                events.push_str(&message_event(&message));
            }
            events.push_str(&sse_event(&last));
            return Poll::Ready(Some(Ok(Bytes::from(events))));
        }
        let (_, last) = respond(&self.id, outcome, self.modern);
        Poll::Ready(Some(Ok(Bytes::from(sse_event(&last)))))
    }
}

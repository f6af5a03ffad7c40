//! Recognizing a request the owned path may serve: every header and member it reads has
//! the one value rmcp would serve unchanged (anything else goes to rmcp).

use std::borrow::Cow;

use rmcp::model::{ClientCapabilities, LoggingLevel, ProgressToken, SubscriptionFilter};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The only protocol revision the owned path serves sessionless.
pub(super) const REVISION: &str = "2026-07-28";

use crate::server::accept::AllowedHost;

/// What a request's headers ask of the owned path.
#[derive(Debug, PartialEq)]
pub(super) enum Wanted<'p> {
    /// A request of MCP 2026-07-28, of this method.
    Modern(&'static str),
    /// A request on this stateful session (MCP 2025-11-25 and the revisions before it that
    /// have sessions).
    Session(&'p str),
}

/// The revisions before 2026-07-28 whose requests travel on sessions.
pub(super) const SESSION_REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// What a request's headers ask, if they are what rmcp would serve as they are: an
/// `Accept` of JSON and SSE (no weights), an allowed `Host` and no `Origin` (rmcp judges
/// those); then either `MCP-Protocol-Version: 2026-07-28` with no session id, no
/// `Mcp-Param-*` header and one `Mcp-Method` of `tools/call`, `tools/list` or
/// `subscriptions/listen`, or a revision
/// with sessions and one session id.
pub(super) fn recognized_headers<'p>(
    parts: &'p http::request::Parts,
    hosts: Option<&[AllowedHost]>,
) -> Option<Wanted<'p>> {
    let headers = &parts.headers;
    if headers.contains_key(http::header::ORIGIN)
        || !accepts_json_and_sse(headers)
        || !hosts.is_none_or(|hosts| host_allowed(parts, hosts))
    {
        return None;
    }
    let version = one_header(parts, &MCP_PROTOCOL_VERSION)?;
    if version == REVISION {
        let method = match one_header(parts, &MCP_METHOD)? {
            "tools/call" => "tools/call",
            "tools/list" => "tools/list",
            "subscriptions/listen" => "subscriptions/listen",
            _ => return None,
        };
        if headers.contains_key(&MCP_SESSION_ID) || headers.keys().any(|name| name.as_str().starts_with("mcp-param-")) {
            return None;
        }
        return Some(Wanted::Modern(method));
    }
    SESSION_REVISIONS.contains(&version).then_some(())?;
    Some(Wanted::Session(one_header(parts, &MCP_SESSION_ID)?))
}

pub(super) static MCP_METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");
pub(super) static MCP_NAME: http::HeaderName = http::HeaderName::from_static("mcp-name");
pub(super) static MCP_PROTOCOL_VERSION: http::HeaderName = http::HeaderName::from_static("mcp-protocol-version");
pub(super) static MCP_SESSION_ID: http::HeaderName = http::HeaderName::from_static("mcp-session-id");

/// The one value of header `name`, as text.
pub(super) fn one_header<'p>(parts: &'p http::request::Parts, name: &http::HeaderName) -> Option<&'p str> {
    let mut values = parts.headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(())?;
    value.to_str().ok()
}

/// `Accept` names both `application/json` and `text/event-stream`, with no parameters.
pub(super) fn accepts_json_and_sse(headers: &http::HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { return false };
        for media in value.split(',') {
            let media = media.trim();
            if media.contains(';') || media.contains('"') {
                return false;
            }
            json |= media.eq_ignore_ascii_case("application/json");
            sse |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// rmcp's DNS-rebinding rule for the `Host` header: its host is one of `allowed`, with the
/// port the entry names, if it names one.
pub(super) fn host_allowed(parts: &http::request::Parts, allowed: &[AllowedHost]) -> bool {
    let Some(host) = one_header(parts, &http::header::HOST).and_then(|h| h.parse::<http::uri::Authority>().ok()) else {
        return false;
    };
    let (name, port) = (host.host().trim_matches(['[', ']']), host.port_u16());
    allowed.iter().any(|entry| entry.admits(name, port))
}

/// An id rmcp echoes byte for byte: an integer (no fraction or exponent; not `-0`, which
/// rmcp echoes as `0`) or a string without escapes.
pub(super) fn plain_id(id: &RawValue) -> Option<&RawValue> {
    let text = id.get();
    let integer = {
        let digits = text.strip_prefix('-').unwrap_or(text);
        !digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()) && text != "-0"
    };
    let string =
        text.len() >= 2 && text.starts_with('"') && text.ends_with('"') && !text[1..text.len() - 1].contains('\\');
    (integer || string).then_some(id)
}

/// The one message, as far as the owned path reads it; any member it does not know sends
/// the request to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Incoming<'a> {
    #[serde(rename = "jsonrpc")]
    pub(super) _jsonrpc: IgnoredAny,
    #[serde(borrow)]
    pub(super) id: &'a RawValue,
    #[serde(borrow)]
    pub(super) method: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) params: Option<Params<'a>>,
}

/// The params of `tools/call`, `tools/list` and `subscriptions/listen`, as the owned path
/// serves them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Params<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) arguments: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) cursor: Option<IgnoredAny>,
    /// What a listening stream asks to hear.
    #[serde(default)]
    pub(super) notifications: Option<SubscriptionFilter>,
    #[serde(rename = "_meta", borrow, default)]
    pub(super) meta: Option<Meta<'a>>,
}

/// A request's `_meta`: at 2026-07-28 the revision and the client's capabilities travel
/// in it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    pub(super) protocol_version: Option<Cow<'a, str>>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    pub(super) client_capabilities: Option<ClientCapabilities>,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    pub(super) _client_info: Option<IgnoredAny>,
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    pub(super) log_level: Option<LoggingLevel>,
    #[serde(rename = "progressToken", default)]
    pub(super) progress_token: Option<ProgressToken>,
    #[serde(borrow, default)]
    pub(super) traceparent: Option<Cow<'a, str>>,
    #[serde(rename = "tracestate", default)]
    pub(super) _tracestate: Option<IgnoredAny>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut request = http::Request::builder().method("POST").uri("/mcp");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    const USUAL: [(&str, &str); 4] = [
        ("host", "127.0.0.1:8080"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];

    fn hosts(entries: &[&str]) -> Vec<AllowedHost> {
        entries.iter().filter_map(|entry| AllowedHost::parse(entry)).collect()
    }

    fn with(change: (&str, &str)) -> http::request::Parts {
        let mut headers: Vec<_> = USUAL.iter().copied().filter(|(name, _)| *name != change.0).collect();
        headers.push(change);
        parts(&headers)
    }

    #[test]
    fn the_usual_headers_are_recognized_and_any_other_goes_to_rmcp() {
        let loopback = hosts(&["localhost", "127.0.0.1", "::1"]);
        let modern = |method| Some(Wanted::Modern(method));
        assert_eq!(recognized_headers(&parts(&USUAL), Some(&loopback)), modern("tools/call"));
        assert_eq!(recognized_headers(&with(("mcp-method", "tools/list")), Some(&loopback)), modern("tools/list"));
        let listen = with(("mcp-method", "subscriptions/listen"));
        assert_eq!(recognized_headers(&listen, Some(&loopback)), modern("subscriptions/listen"));
        let mut session = with(("mcp-protocol-version", "2025-11-25"));
        session.headers.insert("mcp-session-id", http::HeaderValue::from_static("s-1"));
        assert_eq!(recognized_headers(&session, Some(&loopback)), Some(Wanted::Session("s-1")));
        for declined in [
            ("mcp-method", "resources/read"),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", "2024-11-05"),
            ("accept", "application/json"),
            ("accept", "application/json;q=0, text/event-stream"),
            ("accept", "*/*"),
            ("host", "evil.example"),
            ("origin", "http://localhost:9"),
            ("mcp-session-id", "abc"),
            ("mcp-param-region", "eu"),
        ] {
            assert_eq!(recognized_headers(&with(declined), Some(&loopback)), None, "{declined:?}");
        }
        let mut twice = parts(&USUAL);
        twice.headers.append("mcp-method", http::HeaderValue::from_static("tools/call"));
        assert_eq!(recognized_headers(&twice, Some(&loopback)), None, "a header twice");
        assert_eq!(recognized_headers(&with(("host", "anything.example")), None), modern("tools/call"), "any host");
    }

    #[test]
    fn hosts_are_matched_as_rmcp_matches_them() {
        let allowed = hosts(&["Example.com", "api.example.com:8443", "[::1]"]);
        let host = |value| host_allowed(&parts(&[("host", value)]), &allowed);
        assert!(host("example.com") && host("EXAMPLE.com:1234") && host("[::1]:80"));
        assert!(host("api.example.com:8443") && !host("api.example.com:8444") && !host("api.example.com"));
        assert!(!host("example.org") && !host("not a host"));
        assert!(!host_allowed(&parts(&[]), &allowed), "no Host header");
    }

    #[test]
    fn only_ids_rmcp_echoes_byte_for_byte_are_served() {
        let id = |text: &str| serde_json::from_str::<Box<RawValue>>(text).unwrap();
        for served in ["1", "-42", "\"abc\"", "\"\""] {
            assert!(plain_id(&id(served)).is_some(), "{served}");
        }
        for declined in ["1.0", "1e3", "\"a\\\"b\"", "12345678901234567890"] {
            assert!(plain_id(&id(declined)).is_none(), "{declined}");
        }
    }
}

//! OAuth 2.0 Protected Resource Metadata (RFC 9728): where a client that got a 401 learns
//! which authorization server issues tokens for this MCP server, as the MCP authorization
//! specification asks.

use serde::Serialize;

/// The well-known path of protected resource metadata (RFC 9728 §3).
pub(crate) const WELL_KNOWN_PATH: &str = "/.well-known/oauth-protected-resource";

/// This server as an OAuth protected resource: its identifier (the MCP endpoint's URL) and
/// the authorization servers that issue tokens for it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProtectedResource {
    /// The resource identifier: the MCP endpoint's absolute URL
    /// (`https://mcp.example.com/mcp`), which tokens name as their audience.
    pub(crate) resource: String,
    /// The issuers of tokens for this resource.
    pub(crate) authorization_servers: Vec<String>,
    /// Every scope a tool of this server requires.
    pub(crate) scopes_supported: Vec<String>,
    /// Tokens travel in the `Authorization` header only.
    pub(crate) bearer_methods_supported: [&'static str; 1],
}

impl ProtectedResource {
    pub(crate) fn new(resource: String, authorization_servers: Vec<String>, scopes: Vec<String>) -> Self {
        Self { resource, authorization_servers, scopes_supported: scopes, bearer_methods_supported: ["header"] }
    }

    /// The metadata's own URL, as `WWW-Authenticate` names it: the well-known path inserted
    /// between the resource's origin and its path (RFC 9728 §3.1).
    pub(crate) fn metadata_url(&self) -> String {
        let (origin, path) = split_origin(&self.resource);
        format!("{origin}{WELL_KNOWN_PATH}{}", path.trim_end_matches('/'))
    }

    /// The path the metadata is served at on this server (the metadata URL's path).
    pub(crate) fn metadata_path(&self) -> String {
        let (_, path) = split_origin(&self.resource);
        format!("{WELL_KNOWN_PATH}{}", path.trim_end_matches('/'))
    }
}

/// `https://host:port/mcp` → (`https://host:port`, `/mcp`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => url.split_at(after_scheme + slash),
        None => (url, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_after_the_origin() {
        let resource = ProtectedResource::new("https://mcp.example.com:8443/mcp".into(), vec![], vec![]);
        assert_eq!(resource.metadata_url(), "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp");
        assert_eq!(resource.metadata_path(), "/.well-known/oauth-protected-resource/mcp");
        let root = ProtectedResource::new("https://mcp.example.com".into(), vec![], vec![]);
        assert_eq!(root.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource");
    }
}

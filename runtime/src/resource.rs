//! Resources: what a client reads by URI (`resources/read`) — fixed content, content made
//! on each read, and templates (`invoice://{id}/pdf`), which may be bound to a keyed
//! machine's instances so that an invoice's document is readable only once the invoice
//! exists, only in the states you name, and only by its own tenant (or, for a machine
//! whose instances are their creator's, only by its owner).
//!
//! Give them to the server with [`ServerBuilder::resource`](crate::ServerBuilder::resource)
//! and [`ServerBuilder::resource_template`](crate::ServerBuilder::resource_template).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::ResourceContents;

use crate::action::BoxFuture;
use crate::auth::Principal;
use crate::completion::{Completer, Completion};
use crate::error::ToolError;

/// What a read returns: text or bytes, with its media type.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    content: BodyContent,
    mime_type: String,
}

#[derive(Debug, Clone, PartialEq)]
enum BodyContent {
    Text(String),
    Bytes(Vec<u8>),
}

impl Body {
    /// Text, of media type `mime_type` (`text/plain`, `application/json`).
    pub fn text(text: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self { content: BodyContent::Text(text.into()), mime_type: mime_type.into() }
    }

    /// Bytes (sent base64-encoded), of media type `mime_type` (`application/pdf`).
    pub fn bytes(bytes: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self { content: BodyContent::Bytes(bytes.into()), mime_type: mime_type.into() }
    }

    pub(crate) fn contents(&self, uri: &str) -> ResourceContents {
        let (uri, mime_type) = (uri.to_string(), Some(self.mime_type.clone()));
        match &self.content {
            BodyContent::Text(text) => {
                ResourceContents::TextResourceContents { uri, mime_type, text: text.clone(), meta: None }
            }
            BodyContent::Bytes(bytes) => {
                ResourceContents::BlobResourceContents { uri, mime_type, blob: STANDARD.encode(bytes), meta: None }
            }
        }
    }

    fn len(&self) -> usize {
        match &self.content {
            BodyContent::Text(text) => text.len(),
            BodyContent::Bytes(bytes) => bytes.len(),
        }
    }
}

/// One read of a resource, as its reader receives it.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub(crate) uri: String,
    pub(crate) variables: BTreeMap<String, String>,
    pub(crate) principal: Option<Principal>,
    pub(crate) instance: Option<(String, String)>,
    /// The instance's machine and committed context, for a template bound to instances.
    pub(crate) context: Option<(String, serde_json::Value)>,
}

impl ReadRequest {
    /// The URI read.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The value of a template's variable in the URI (`id` in `invoice://{id}/pdf`). For a
    /// template bound to instances, the key variable holds the key's canonical spelling.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }

    /// Who reads, when the request authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// For a template bound to instances: the instance's key and its state now.
    pub fn instance(&self) -> Option<(&str, &str)> {
        self.instance.as_ref().map(|(key, state)| (key.as_str(), state.as_str()))
    }

    /// For a template bound to instances of a machine with a `context`: the instance's
    /// data as committed now (`None` if it has none yet), to render. A stored context that
    /// does not read as `T` is `CONTEXT_UNREADABLE`.
    pub fn context<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, ToolError> {
        let Some((machine, value)) = &self.context else { return Ok(None) };
        T::deserialize(value).map(Some).map_err(|error| {
            let instance = self.instance.as_ref().map_or("", |(key, _)| key.as_str());
            tracing::warn!(%error, machine, instance, "an instance's context does not read as a resource asks");
            let name = std::any::type_name::<T>();
            ToolError::context_unreadable(machine, instance, name.rsplit("::").next().unwrap_or(name))
        })
    }
}

/// Makes a resource's body on each read.
pub(crate) type Reader = Arc<dyn Fn(ReadRequest) -> BoxFuture<Result<Body, ToolError>> + Send + Sync>;

fn reader<F, Fut>(read: F) -> Reader
where
    F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Body, ToolError>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(read(request)))
}

/// A resource at one URI.
///
/// ```
/// use toolgate_runtime::resource::{Body, Resource};
/// let terms = Resource::fixed("docs://terms", "terms", Body::text("Net 30.", "text/plain"))
///     .description("The payment terms every invoice follows");
/// let rates = Resource::new("fx://rates", "rates", |_read| async {
///     Ok(Body::text(r#"{"EUR/USD": 1.08}"#, "application/json"))
/// });
/// # let _ = (terms, rates);
/// ```
#[derive(Clone)]
pub struct Resource {
    pub(crate) definition: rmcp::model::Resource,
    pub(crate) body: ResourceBody,
    pub(crate) scopes: Vec<String>,
}

#[derive(Clone)]
pub(crate) enum ResourceBody {
    Fixed(Body),
    Read(Reader),
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource").field("uri", &self.definition.uri).finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource whose content never changes while the server runs (clients may cache it).
    pub fn fixed(uri: impl Into<String>, name: impl Into<String>, body: Body) -> Self {
        let definition =
            rmcp::model::Resource::new(uri, name).with_mime_type(body.mime_type.clone()).with_size(body.len() as u64);
        Self { definition, body: ResourceBody::Fixed(body), scopes: Vec::new() }
    }

    /// A resource whose content `read` makes on each read.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Body, ToolError>> + Send + 'static,
    {
        Self {
            definition: rmcp::model::Resource::new(uri, name),
            body: ResourceBody::Read(reader(read)),
            scopes: Vec::new(),
        }
    }

    /// What it is, for the model and the person.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = Some(description.into());
        self
    }

    /// A title for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.definition.title = Some(title.into());
        self
    }

    /// The media type of its content, when the reader makes it.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.definition.mime_type = Some(mime_type.into());
        self
    }

    /// A scope a principal needs to see and read it (call once per scope).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.definition.uri
    }
}

/// Resources named by a URI template (`invoice://{id}/pdf`, RFC 6570's simple `{name}`
/// variables, each matching one path segment), read by one reader.
///
/// Bound to a keyed machine with [`instances_of`](Self::instances_of), a URI names an
/// instance: it is readable only once the instance exists (a call moved it), only in the
/// states given to [`in_states`](Self::in_states), and, for a tenant-scoped machine, only
/// within the reader's tenant (for a principal-owned one, only by its owner); anything else is "resource not found", whether or not the
/// instance exists. A 2026-07-28 client that listens to the URI
/// (`subscriptions/listen` with `resourceSubscriptions`), or a 2025-11-25 session that
/// subscribed to it, hears `notifications/resources/updated` whenever a call moves the
/// instance.
///
/// ```
/// use toolgate_runtime::resource::{Body, ResourceTemplate};
/// let pdf = ResourceTemplate::new("invoice://{id}/pdf", "invoice-pdf", |read| async move {
///     let id = read.variable("id").unwrap_or_default().to_string();
///     Ok(Body::bytes(format!("%PDF-1.7 {id}").into_bytes(), "application/pdf"))
/// })
/// .instances_of("invoice", "id")
/// .in_states(["approved", "discharged"]);
/// # let _ = pdf;
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) definition: rmcp::model::ResourceTemplate,
    pub(crate) pattern: UriPattern,
    pub(crate) read: Reader,
    pub(crate) completions: HashMap<String, Completer>,
    pub(crate) instances: Option<Instances>,
    pub(crate) scopes: Vec<String>,
}

/// A template's binding to a keyed machine.
#[derive(Debug, Clone)]
pub(crate) struct Instances {
    pub(crate) machine: String,
    /// The template variable that holds the key.
    pub(crate) variable: String,
    /// The states in which the instance's resource is readable; empty: any, once it exists.
    pub(crate) states: Vec<String>,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate").field("uri_template", &self.definition.uri_template).finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// Resources at `uri_template`, each read by `read`.
    pub fn new<F, Fut>(uri_template: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Body, ToolError>> + Send + 'static,
    {
        let uri_template = uri_template.into();
        Self {
            pattern: UriPattern::parse(&uri_template),
            definition: rmcp::model::ResourceTemplate::new(uri_template, name),
            read: reader(read),
            completions: HashMap::new(),
            instances: None,
            scopes: Vec::new(),
        }
    }

    /// What they are, for the model and the person.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = Some(description.into());
        self
    }

    /// A title for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.definition.title = Some(title.into());
        self
    }

    /// The media type of their content.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.definition.mime_type = Some(mime_type.into());
        self
    }

    /// Suggests values for `variable` (`completion/complete`).
    #[must_use]
    pub fn complete(
        mut self,
        variable: impl Into<String>,
        complete: impl Fn(&Completion) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completions.insert(variable.into(), Arc::new(complete));
        self
    }

    /// Binds the URIs to the instances of the keyed machine `machine`: `variable` holds the
    /// instance's key (checked and canonicalized as a call's key argument is).
    #[must_use]
    pub fn instances_of(mut self, machine: impl Into<String>, variable: impl Into<String>) -> Self {
        self.instances = Some(Instances { machine: machine.into(), variable: variable.into(), states: Vec::new() });
        self
    }

    /// The states in which an instance's resource is readable (default: any, once the
    /// instance exists). Needs [`instances_of`](Self::instances_of).
    #[must_use]
    pub fn in_states(mut self, states: impl IntoIterator<Item = impl Into<String>>) -> Self {
        if let Some(instances) = &mut self.instances {
            instances.states = states.into_iter().map(Into::into).collect();
        }
        self
    }

    /// A scope a principal needs to see and read them (call once per scope).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }
}

/// A URI template of literal text and `{name}` variables.
#[derive(Debug, Clone)]
pub(crate) struct UriPattern {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriPattern {
    fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_string()));
            }
            parts.push(Part::Variable(rest[open + 1..open + close].to_string()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        Self { parts }
    }

    /// The template's variables.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values if `uri` matches: each variable one non-empty run without `/`,
    /// `?` or `#`.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(['/', '?', '#']) {
                        return None;
                    }
                    values.insert(name.clone(), value.to_string());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_matches_one_segment_per_variable_and_expands_back() {
        let pattern = UriPattern::parse("test://template/{id}/data");
        assert_eq!(pattern.variables().collect::<Vec<_>>(), ["id"]);
        let values = pattern.matches("test://template/42/data").unwrap();
        assert_eq!(values["id"], "42");
        for other in
            ["test://template//data", "test://template/4/2/data", "test://template/42/dat", "x://template/42/data"]
        {
            assert_eq!(pattern.matches(other), None, "{other}");
        }
        let trailing = UriPattern::parse("invoice://{id}");
        assert_eq!(trailing.matches("invoice://INV-7").unwrap()["id"], "INV-7");
        assert_eq!(trailing.matches("invoice://INV-7/pdf"), None);
    }
}

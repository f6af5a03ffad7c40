//! Prompts: message templates a person picks in the client (`prompts/get`), with
//! arguments, completions for them, and messages of text, images and embedded resources.
//!
//! Give them to the server with [`ServerBuilder::prompt`](crate::ServerBuilder::prompt).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use rmcp::model::{PromptArgument, PromptMessage, Role};

use crate::action::BoxFuture;
use crate::auth::Principal;
use crate::completion::{Completer, Completion};
use crate::content::Block;
use crate::error::ToolError;
use crate::input::{Answer, Ask, Inputs};

/// A prompt: its name, description and arguments, and how its messages are made.
///
/// ```
/// use toolgate_runtime::content::Block;
/// use toolgate_runtime::prompt::{Messages, Prompt};
/// let review = Prompt::new("invoice_review", "Review an invoice before approving it", |call| async move {
///     let id = call.argument("id").unwrap_or_default().to_string();
///     Ok(Messages::new().user(Block::text(format!("Check invoice {id}: totals, tax, due date."))))
/// })
/// .argument("id", "The invoice id (INV-7)", true);
/// # let _ = review;
/// ```
#[derive(Clone)]
pub struct Prompt {
    pub(crate) definition: rmcp::model::Prompt,
    pub(crate) render: Renderer,
    pub(crate) completions: HashMap<String, Completer>,
    pub(crate) scopes: Vec<String>,
}

pub(crate) type Renderer = Arc<dyn Fn(PromptCall) -> BoxFuture<Result<Messages, ToolError>> + Send + Sync>;

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt").field("name", &self.definition.name).finish_non_exhaustive()
    }
}

impl Prompt {
    /// The prompt `name`, described by `description`, its messages made by `render`.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, render: F) -> Self
    where
        F: Fn(PromptCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Messages, ToolError>> + Send + 'static,
    {
        let definition = rmcp::model::Prompt::new(name, Some(description.into()), None);
        Self {
            definition,
            render: Arc::new(move |call| Box::pin(render(call))),
            completions: HashMap::new(),
            scopes: Vec::new(),
        }
    }

    /// An argument, described for the person; a `required` one must be given.
    #[must_use]
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        let argument = PromptArgument::new(name).with_description(description).with_required(required);
        self.definition.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }

    /// Suggests values for `argument` (`completion/complete`).
    #[must_use]
    pub fn complete(
        mut self,
        argument: impl Into<String>,
        complete: impl Fn(&Completion) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completions.insert(argument.into(), Arc::new(complete));
        self
    }

    /// A title for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.definition.title = Some(title.into());
        self
    }

    /// A scope a principal needs to see and get it (call once per scope).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The arguments it requires that `given` lacks, in declaration order.
    pub(crate) fn missing<'a>(&'a self, given: &BTreeMap<String, String>) -> Vec<&'a str> {
        let arguments = self.definition.arguments.iter().flatten();
        arguments
            .filter(|a| a.required == Some(true) && !given.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect()
    }
}

/// One `prompts/get`, as a prompt's renderer receives it.
#[derive(Clone)]
pub struct PromptCall {
    pub(crate) arguments: BTreeMap<String, String>,
    pub(crate) principal: Option<Principal>,
    pub(crate) inputs: Arc<Inputs>,
}

impl std::fmt::Debug for PromptCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptCall").field("arguments", &self.arguments).finish_non_exhaustive()
    }
}

impl PromptCall {
    /// An argument's value, if given.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }

    /// Who asks, when the request authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// Asks the client a question while the prompt is made, as
    /// [`Ctx::ask`](crate::Ctx::ask) does for a tool.
    pub async fn ask(&self, key: impl Into<String>, question: Ask) -> Result<Answer, ToolError> {
        let key = key.into();
        let mut answers = self.inputs.ask_all(vec![(key.clone(), question)]).await?;
        answers.remove(&key).ok_or_else(|| ToolError::internal("an asked question has no answer"))
    }
}

/// A prompt's messages, in order.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    pub(crate) messages: Vec<PromptMessage>,
    pub(crate) description: Option<String>,
}

impl Messages {
    /// No messages yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A message from the user.
    #[must_use]
    pub fn user(mut self, block: Block) -> Self {
        self.messages.push(PromptMessage::new(Role::User, block.0));
        self
    }

    /// A message from the assistant.
    #[must_use]
    pub fn assistant(mut self, block: Block) -> Self {
        self.messages.push(PromptMessage::new(Role::Assistant, block.0));
        self
    }

    /// A description of this rendering (the prompt's own is used otherwise).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

//! Completions (`completion/complete`): suggested values for a prompt's argument or a
//! resource template's variable, as the person types.

use std::collections::HashMap;
use std::sync::Arc;

/// What the client asks to complete: one argument, what has been typed of it, and the
/// values already chosen for the others.
#[derive(Debug, Clone)]
pub struct Completion {
    pub(crate) argument: String,
    pub(crate) value: String,
    pub(crate) context: HashMap<String, String>,
}

impl Completion {
    /// The argument (or template variable) being completed.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// What has been typed of it so far.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The value already chosen for another argument, if the client said.
    pub fn chosen(&self, argument: &str) -> Option<&str> {
        self.context.get(argument).map(String::as_str)
    }
}

/// Suggests values: given what was typed, the candidates (the server keeps the first 100).
pub(crate) type Completer = Arc<dyn Fn(&Completion) -> Vec<String> + Send + Sync>;

/// The values of `candidates` that start with what was typed, ignoring case: the usual
/// completer for a fixed list.
///
/// ```
/// use toolgate_runtime::completion::starting_with;
/// let currencies = starting_with(["EUR", "USD", "GBP"]);
/// # let _ = currencies;
/// ```
pub fn starting_with<I, S>(candidates: I) -> impl Fn(&Completion) -> Vec<String> + Send + Sync + 'static
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let candidates: Vec<String> = candidates.into_iter().map(Into::into).collect();
    move |completion: &Completion| {
        let typed = completion.value().to_lowercase();
        candidates.iter().filter(|c| c.to_lowercase().starts_with(&typed)).cloned().collect()
    }
}

//! Handlers with their types erased into plain data: two schema functions and one call
//! function, built by `#[action]` in a `const` so a registration stays static.
//!
//! The handler's input and output types are each checked in exactly one place, where
//! the generated code names `<Input as ActionInput>::IO` and `<Output as ActionOutput>::IO`:
//! one mistake, one error, in terms of the user's own type.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use super::Ctx;
use crate::error::{FieldError, ToolError};

/// A boxed, `Send` future: what an erased handler returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What an `#[action]`'s input type needs: `Deserialize` (the call's arguments become
/// it) and `JsonSchema` (its schema is the tool's `inputSchema`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the input of an `#[action]`: it must implement `Deserialize` and `JsonSchema`",
    label = "the handler's input type",
    note = "derive both on it: `#[derive(Deserialize, JsonSchema)]` (they are in `toolgate::prelude`)"
)]
pub trait ActionInput: Sized {
    /// How the input is described and read (generated code uses it).
    #[doc(hidden)]
    const IO: InputIo<Self>;
}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> ActionInput for T {
    const IO: InputIo<T> = InputIo { schema: input_schema_for::<T>, parse: deserialize_input::<T> };
}

/// What an `#[action]`'s output type needs: `Serialize` (it becomes the result's
/// `structuredContent`) and `JsonSchema` (its schema is the tool's `outputSchema`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of an `#[action]`: it must implement `Serialize` and `JsonSchema`",
    label = "the handler's output type",
    note = "derive both on it: `#[derive(Serialize, JsonSchema)]` (they are in `toolgate::prelude`)"
)]
pub trait ActionOutput: Sized {
    /// How the output is described and written (generated code uses it).
    #[doc(hidden)]
    const IO: OutputIo<Self>;
}

impl<T: Serialize + JsonSchema + Send + 'static> ActionOutput for T {
    const IO: OutputIo<T> = OutputIo { schema: schema_for::<T>, render: serialize_output::<T>, types: PhantomData };
}

/// Content blocks: the result's `content`, with no structured type of the handler's own.
impl ActionOutput for crate::content::Content {
    const IO: OutputIo<Self> = OutputIo {
        schema: empty_object_schema,
        render: |content| Ok(Output { structured: Value::Object(Map::new()), blocks: Some(content.into_blocks()) }),
        types: PhantomData,
    };
}

/// What a handler's output becomes: the result's `structuredContent`, and its content
/// blocks when the handler returned [`Content`](crate::content::Content).
#[derive(Debug)]
pub struct Output {
    pub(crate) structured: Value,
    pub(crate) blocks: Option<Vec<rmcp::model::ContentBlock>>,
}

/// A handler with its types erased.
#[derive(Clone, Copy)]
pub struct Handler {
    /// The JSON Schema of the arguments.
    pub input_schema: fn() -> Schema,
    /// The JSON Schema of the structured result.
    pub output_schema: fn() -> Schema,
    /// Deserializes the arguments, runs the handler and serializes its output.
    pub call: fn(Arguments, Ctx) -> Called,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handler")
    }
}

/// How a handler's input is described and read.
#[derive(Debug)]
pub struct InputIo<I> {
    /// The input's schema.
    pub schema: fn() -> Schema,
    /// Arguments → input, naming the offending field on failure.
    pub parse: fn(Map<String, Value>) -> Result<I, ToolError>,
}

impl InputIo<()> {
    /// For a handler without input: its arguments are an empty object.
    pub const fn none() -> Self {
        Self { schema: empty_object_schema, parse: |_| Ok(()) }
    }
}

/// How a handler's output is described and written.
#[derive(Debug)]
pub struct OutputIo<O> {
    /// The output's schema.
    pub schema: fn() -> Schema,
    /// Output → `structuredContent` (and content blocks).
    pub render: fn(O) -> Result<Output, ToolError>,
    types: PhantomData<fn(O)>,
}

/// A call's arguments, as the generated call function receives them.
pub type Arguments = Map<String, Value>;

/// What the generated call function returns.
pub type Called = BoxFuture<Result<Output, ToolError>>;

fn schema_for<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>()
}

/// An input's schema, with no `$schema` of schemars' own: MCP's default dialect is 2020-12
/// already, and a model pays for every listed word. One the type declares
/// (`#[schemars(extend("$schema" = …))]`) is kept, and listed as declared.
fn input_schema_for<T: JsonSchema>() -> Schema {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.into_generator().into_root_schema_for::<T>()
}

fn empty_object_schema() -> Schema {
    schemars::json_schema!({ "type": "object", "properties": {} })
}

/// Deserializes arguments, naming the offending field by its JSON pointer on failure.
fn deserialize_input<I: DeserializeOwned>(arguments: Map<String, Value>) -> Result<I, ToolError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|error| {
        let mut pointer: String = error
            .path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => Some(format!("/{index}")),
                serde_path_to_error::Segment::Map { key } | serde_path_to_error::Segment::Enum { variant: key } => {
                    Some(format!("/{}", key.replace('~', "~0").replace('/', "~1")))
                }
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        let problem = error.into_inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        let missing = problem.strip_prefix("missing field `").and_then(|rest| rest.split('`').next());
        if let Some(name) = missing {
            pointer.push('/');
            pointer.push_str(name);
        }
        let problem = if missing.is_some() { "is required".to_string() } else { problem };
        ToolError::invalid_arguments([FieldError::new(pointer, problem)])
    })
}

/// The output as JSON. (A tool whose output is not an object — a `String`, a number, a
/// list — has it wrapped as `{"result": …}` by its tool entry, which knows its schema.)
fn serialize_output<O: Serialize>(output: O) -> Result<Output, ToolError> {
    match serde_json::to_value(output) {
        Ok(structured) => Ok(Output { structured, blocks: None }),
        Err(error) => Err(ToolError::internal(format_args!("the handler's output does not serialize: {error}"))),
    }
}

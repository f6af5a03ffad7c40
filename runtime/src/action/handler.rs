//! Type erasure of handlers: `async fn(I, Ctx) -> Result<O, ToolError>` and
//! `async fn(Ctx) -> Result<O, ToolError>` behind one object-safe trait.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use super::{Ctx, IsCtx};
use crate::error::{FieldError, ToolError};

/// A boxed, `Send` future: what an erased handler returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A handler with its types erased: schemas on one side, JSON in and out on the other.
pub trait ErasedHandler: Send + Sync {
    /// The JSON Schema of the arguments.
    fn input_schema(&self) -> Schema;
    /// The JSON Schema of the structured result.
    fn output_schema(&self) -> Schema;
    /// Deserializes `arguments`, runs the handler and serializes its output.
    fn call(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<Result<Value, ToolError>>;
}

fn schema_for<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>()
}

fn empty_object_schema() -> Schema {
    schemars::json_schema!({ "type": "object", "properties": {} })
}

/// A handler that takes arguments: `async fn(input: I, ctx: Ctx) -> Result<O, ToolError>`.
///
/// The context type `C` is generic only so that a wrong last parameter fails the
/// [`IsCtx`] bound, whose message speaks the handler author's language.
pub struct WithInput<F, I, C, O> {
    f: F,
    types: PhantomData<fn(I, C) -> O>,
}

impl<F, I, C: IsCtx, O> WithInput<F, I, C, O> {
    /// Wraps `f`; usable in `const` so registrations stay static data.
    pub const fn new<Fut>(f: F) -> Self
    where
        F: Fn(I, C) -> Fut,
        Fut: Future<Output = Result<O, ToolError>>,
    {
        Self { f, types: PhantomData }
    }
}

impl<F, I, C, O, Fut> ErasedHandler for WithInput<F, I, C, O>
where
    F: Fn(I, C) -> Fut + Send + Sync,
    C: IsCtx,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    I: DeserializeOwned + JsonSchema,
    O: Serialize + JsonSchema,
{
    fn input_schema(&self) -> Schema {
        schema_for::<I>()
    }

    fn output_schema(&self) -> Schema {
        schema_for::<O>()
    }

    fn call(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<Result<Value, ToolError>> {
        match deserialize_input::<I>(arguments) {
            Ok(input) => {
                let running = (self.f)(input, C::from_ctx(ctx));
                Box::pin(async move { serialize_output(running.await?) })
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}

/// A handler without arguments: `async fn(ctx: Ctx) -> Result<O, ToolError>`.
pub struct WithoutInput<F, C, O> {
    f: F,
    types: PhantomData<fn(C) -> O>,
}

impl<F, C: IsCtx, O> WithoutInput<F, C, O> {
    /// Wraps `f`; usable in `const` so registrations stay static data.
    pub const fn new<Fut>(f: F) -> Self
    where
        F: Fn(C) -> Fut,
        Fut: Future<Output = Result<O, ToolError>>,
    {
        Self { f, types: PhantomData }
    }
}

impl<F, C, O, Fut> ErasedHandler for WithoutInput<F, C, O>
where
    F: Fn(C) -> Fut + Send + Sync,
    C: IsCtx,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Serialize + JsonSchema,
{
    fn input_schema(&self) -> Schema {
        empty_object_schema()
    }

    fn output_schema(&self) -> Schema {
        schema_for::<O>()
    }

    fn call(&self, _arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<Result<Value, ToolError>> {
        let running = (self.f)(C::from_ctx(ctx));
        Box::pin(async move { serialize_output(running.await?) })
    }
}

/// Deserializes arguments, naming the offending field's path on failure.
fn deserialize_input<I: DeserializeOwned>(arguments: Map<String, Value>) -> Result<I, ToolError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|error| {
        let path = error.path().to_string();
        let problem = error.into_inner().to_string();
        // serde reports a missing field at its parent; name the field itself.
        let missing = problem.strip_prefix("missing field `").and_then(|rest| rest.split('`').next());
        let field = match (path.as_str(), missing) {
            (".", Some(name)) => name.to_string(),
            (_, Some(name)) => format!("{path}.{name}"),
            (".", None) => "(arguments)".to_string(),
            _ => path,
        };
        let problem = if missing.is_some() { "is required".to_string() } else { problem };
        ToolError::InvalidArgument { errors: vec![FieldError::new(field, problem)] }
    })
}

fn serialize_output<O: Serialize>(output: O) -> Result<Value, ToolError> {
    match serde_json::to_value(output) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => {
            Err(ToolError::internal(format_args!("the handler's output must serialize to a JSON object, got {other}")))
        }
        Err(error) => Err(ToolError::internal(format_args!("the handler's output does not serialize: {error}"))),
    }
}

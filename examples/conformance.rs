//! The fixtures of the official MCP conformance suites (`@modelcontextprotocol/conformance`),
//! built with toolgate's public API only: the `test_*` tools (`test_custom_headers` with
//! an argument that travels as a header too, SEP-2243), the `test://` resources and
//! template, the `test_*prompt*` prompts, completions, and the 2026-07-28 multi round-trip
//! (`test_input_required_result_*`) family. `scripts/conformance.sh` runs the suites
//! against it, stateful and `--stateless`.
//!
//! ```text
//! cargo run --example conformance -- --http 127.0.0.1:8011 --store memory
//! ```

#![allow(deprecated)] // the suites exercise sampling and roots, deprecated by SEP-2577

use std::time::Duration;

use serde_json::json;
use toolgate::completion::starting_with;
use toolgate::content::{Block, Content};
use toolgate::input::{Answer, Ask};
use toolgate::prelude::*;
use toolgate::prompt::{Messages, Prompt};
use toolgate::resource::{Body, Resource, ResourceTemplate};
use toolgate::server::ServerBuilder;

/// A 1×1 transparent PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent sample (8 kHz, 8-bit mono).
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 37, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0, 0, 1, 0, 1, 0, 0x40,
    0x1F, 0, 0, 0x40, 0x1F, 0, 0, 1, 0, 8, 0, b'd', b'a', b't', b'a', 1, 0, 0, 0, 0x80,
];

fn text(text: impl Into<String>) -> Content {
    Content::from(Block::text(text))
}

/// Where a call is routed: travels in the body and, as `Mcp-Param-Region`, in a header.
#[derive(Deserialize, JsonSchema)]
struct Routed {
    /// The region the call is for (any string).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Echoes the region its header carried (SEP-2243: the server checks the header against
/// the body).
#[action(global)]
async fn test_custom_headers(input: Routed) -> Result<Content, ToolError> {
    Ok(text(format!("region: {}", input.region)))
}

/// Returns a simple text response.
#[action(global)]
async fn test_simple_text() -> Result<Content, ToolError> {
    Ok(text("This is a simple text response for testing."))
}

/// Returns an image (a 1×1 PNG).
#[action(global)]
async fn test_image_content() -> Result<Content, ToolError> {
    Ok(Block::image(PNG, "image/png").into())
}

/// Returns audio (a WAV file).
#[action(global)]
async fn test_audio_content() -> Result<Content, ToolError> {
    Ok(Block::audio(WAV, "audio/wav").into())
}

/// Returns an embedded text resource.
#[action(global)]
async fn test_embedded_resource() -> Result<Content, ToolError> {
    Ok(Block::embedded_text("test://embedded-resource", "text/plain", "This is an embedded resource content.").into())
}

/// Returns text, an image and an embedded JSON resource together.
#[action(global)]
async fn test_multiple_content_types() -> Result<Content, ToolError> {
    Ok(Content::new().with(Block::text("Multiple content types test:")).with(Block::image(PNG, "image/png")).with(
        Block::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            json!({ "test": "data", "value": 123 }).to_string(),
        ),
    ))
}

/// Sends three log messages while it runs.
#[action(global)]
async fn test_tool_with_logging(ctx: Ctx) -> Result<Content, ToolError> {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LogLevel::Info, *message).await;
    }
    Ok(text("Tool with logging executed successfully"))
}

/// Reports progress three times (0, 50 and 100 of 100) while it runs.
#[action(global)]
async fn test_tool_with_progress(ctx: Ctx) -> Result<Content, ToolError> {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(Progress::new(step).total(100.0).message(format!("Completed step {step} of 100"))).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(text("Progress reported"))
}

/// Always fails, as a result the model reads (`isError`).
#[action(global)]
async fn test_error_handling() -> Result<Content, ToolError> {
    Err(ToolError::failed("TEST_ERROR", "This tool intentionally returns an error for testing"))
}

#[derive(Deserialize, JsonSchema)]
struct SamplingRequest {
    /// What to ask the client's model.
    prompt: String,
}

/// Asks the client's model to answer a prompt (sampling).
#[action(global)]
async fn test_sampling(input: SamplingRequest, ctx: Ctx) -> Result<Content, ToolError> {
    let answer = ctx.sample("completion", input.prompt, 100).await?;
    Ok(text(format!("LLM response: {answer}")))
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationRequest {
    /// What to tell the person.
    message: String,
}

/// Asks the person for a user name and an email address (elicitation).
#[action(global)]
async fn test_elicitation(input: ElicitationRequest, ctx: Ctx) -> Result<Content, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        },
        "required": ["username", "email"],
    });
    let answer = ctx.ask("user", Ask::form_schema(input.message, schema)?).await?;
    Ok(text(format!("User response: {}", describe(&answer))))
}

fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Accepted(content) => {
            format!("action=accept, content={}", content.clone().unwrap_or_else(|| json!({})))
        }
        Answer::Declined => "action=decline".into(),
        _ => "action=cancel".into(),
    }
}

/// Asks for a form whose fields have defaults (SEP-1034).
#[action(global)]
async fn test_elicitation_sep1034_defaults(ctx: Ctx) -> Result<Content, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "description": "Verification status", "default": true },
        },
    });
    let answer = ctx
        .ask("defaults", Ask::form_schema("Please review and update the form fields with defaults", schema)?)
        .await?;
    Ok(text(format!("Elicitation completed: {}", describe(&answer))))
}

/// Asks for a form with every kind of enumeration (SEP-1330).
#[action(global)]
async fn test_elicitation_sep1330_enums(ctx: Ctx) -> Result<Content, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "description": "Choose an option", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "description": "Choose a titled option", "oneOf": [
                { "const": "value1", "title": "First Option" },
                { "const": "value2", "title": "Second Option" },
                { "const": "value3", "title": "Third Option" },
            ] },
            "legacyEnum": { "type": "string", "description": "Choose a legacy option", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array", "description": "Choose multiple options",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "description": "Choose multiple titled options", "items": { "anyOf": [
                { "const": "value1", "title": "First Choice" },
                { "const": "value2", "title": "Second Choice" },
                { "const": "value3", "title": "Third Choice" },
            ] } },
        },
    });
    let answer = ctx.ask("enums", Ask::form_schema("Please select options from the enum fields", schema)?).await?;
    Ok(text(format!("Elicitation completed: {}", describe(&answer))))
}

/// A street address.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "address", extend("$anchor" = "addressDef"))]
#[allow(dead_code)]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

/// How to reach a person.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "$schema" = "https://json-schema.org/draft/2020-12/schema",
    "allOf" = [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
    "if" = { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
    "then" = { "required": ["phone"] },
    "else" = { "required": ["email"] },
))]
#[allow(dead_code)]
struct Contact {
    name: Option<String>,
    address: Option<Address>,
    #[serde(rename = "contactMethod")]
    contact_method: Option<ContactMethod>,
    phone: Option<String>,
    email: Option<String>,
}

/// Phone or email.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ContactMethod {
    Phone,
    Email,
}

/// Takes arguments described with JSON Schema 2020-12 keywords ($schema, $defs, allOf, if/then/else).
#[action(global)]
async fn json_schema_2020_12_tool(_input: Contact) -> Result<Content, ToolError> {
    Ok(text("Schema accepted"))
}

/// Needs the client's model (sampling): refused to a client that did not declare it.
#[action(global)]
async fn test_missing_capability(ctx: Ctx) -> Result<Content, ToolError> {
    let answer = ctx.sample("completion", "Say hello.", 50).await?;
    Ok(text(format!("Sampled: {answer}")))
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Color {
    /// Your favourite colour.
    color: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirmation {
    /// Whether you confirm.
    ok: bool,
}

/// Asks the person a question without ever sending the client a request of its own.
#[action(global)]
async fn test_streaming_elicitation(ctx: Ctx) -> Result<Content, ToolError> {
    let name = ctx.elicit::<Name>("user_name", "What is your name?").await?;
    Ok(text(format!("Hello, {}!", name.map_or("stranger".into(), |n| n.name))))
}

/// Logs one message, at the level the request asks for.
#[action(global)]
async fn test_logging_tool(ctx: Ctx) -> Result<Content, ToolError> {
    ctx.log(LogLevel::Info, "test_logging_tool ran").await;
    Ok(text("Logged"))
}

/// Tells listening clients the tool list changed.
#[action(global)]
async fn test_trigger_tool_change(ctx: Ctx) -> Result<Content, ToolError> {
    if let Some(server) = ctx.server() {
        server.tools_changed().await;
    }
    Ok(text("Tool list change notified"))
}

/// Offers one more prompt (`test_dynamic_prompt`), which tells listening clients the
/// prompt list changed.
#[action(global)]
async fn test_trigger_prompt_change(ctx: Ctx) -> Result<Content, ToolError> {
    if let Some(server) = ctx.server() {
        let prompt = Prompt::new("test_dynamic_prompt", "A prompt added while the server runs", |_| async {
            Ok(Messages::new().user(Block::text("This prompt was added while the server runs.")))
        });
        server.add_prompt(prompt).await;
    }
    Ok(text("Prompt list change notified"))
}

/// Asks the person's name before greeting them.
#[action(global)]
async fn test_input_required_result_elicitation(ctx: Ctx) -> Result<Content, ToolError> {
    let name = ctx.elicit::<Name>("user_name", "What is your name?").await?;
    Ok(text(format!("Hello, {}!", name.map_or("unknown".into(), |n| n.name))))
}

/// Asks the client's model for the capital of France.
#[action(global)]
async fn test_input_required_result_sampling(ctx: Ctx) -> Result<Content, ToolError> {
    let answer = ctx.sample("capital_question", "What is the capital of France?", 100).await?;
    Ok(text(format!("Sampling result: {answer}")))
}

/// Asks the client for its roots.
#[action(global)]
async fn test_input_required_result_list_roots(ctx: Ctx) -> Result<Content, ToolError> {
    let Answer::Roots(roots) = ctx.ask("client_roots", Ask::roots()).await? else {
        return Err(ToolError::failed("NO_ROOTS", "the client did not list its roots"));
    };
    Ok(text(format!("Found {} root(s)", roots.len())))
}

/// Asks for a confirmation, carried across rounds in the sealed request state.
#[action(global)]
async fn test_input_required_result_request_state(ctx: Ctx) -> Result<Content, ToolError> {
    let confirmed = ctx.elicit::<Confirmation>("confirm", "Please confirm").await?;
    Ok(text(format!("state-ok: confirmed={}", confirmed.is_some_and(|c| c.ok))))
}

/// Asks for a name, a greeting from the client's model and the client's roots at once.
#[action(global)]
async fn test_input_required_result_multiple_inputs(ctx: Ctx) -> Result<Content, ToolError> {
    let mut answers = ctx
        .ask_all([
            ("user_name".to_string(), Ask::form::<Name>("What is your name?")?),
            ("greeting".to_string(), Ask::sample("Generate a greeting", 50)),
            ("client_roots".to_string(), Ask::roots()),
        ])
        .await?;
    let name = answers.remove("user_name").map(|a| a.accepted::<Name>()).transpose()?.flatten();
    let greeting = match answers.remove("greeting") {
        Some(Answer::Sampled { text, .. }) => text,
        _ => String::new(),
    };
    let roots = match answers.remove("client_roots") {
        Some(Answer::Roots(roots)) => roots.len(),
        _ => 0,
    };
    Ok(text(format!("Name: {}; Greeting: {greeting}; Roots: {roots}", name.map_or(String::new(), |n| n.name))))
}

/// Asks two questions, one round each.
#[action(global)]
async fn test_input_required_result_multi_round(ctx: Ctx) -> Result<Content, ToolError> {
    let name = ctx.elicit::<Name>("step1", "Step 1: What is your name?").await?;
    let color = ctx.elicit::<Color>("step2", "Step 2: What is your favorite color?").await?;
    Ok(text(format!(
        "Multi-round complete for {} who likes {}",
        name.map_or(String::new(), |n| n.name),
        color.map_or(String::new(), |c| c.color)
    )))
}

/// Asks for a confirmation; a request state altered on its way back is refused.
#[action(global)]
async fn test_input_required_result_tampered_state(ctx: Ctx) -> Result<Content, ToolError> {
    let confirmed = ctx.elicit::<Confirmation>("confirm", "Please confirm").await?;
    Ok(text(format!("integrity-ok: confirmed={}", confirmed.is_some_and(|c| c.ok))))
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only asked for
struct AnyValue {
    /// Any value.
    value: String,
}

/// Asks only what the client declared it can answer.
#[action(global)]
async fn test_input_required_result_capabilities(ctx: Ctx) -> Result<Content, ToolError> {
    let mut questions = Vec::new();
    let form = Ask::form::<AnyValue>("Elicitation input")?;
    if ctx.can_ask(&form) {
        questions.push(("elicit_input".to_string(), form));
    }
    let sample = Ask::sample("Sample request", 50);
    if ctx.can_ask(&sample) {
        questions.push(("sample_input".to_string(), sample));
    }
    if questions.is_empty() {
        return Ok(text("No supported capabilities declared"));
    }
    let answers = ctx.ask_all(questions).await?;
    Ok(text(format!("capabilities-ok: received {}", answers.keys().cloned().collect::<Vec<_>>().join(", "))))
}

fn resources(server: ServerBuilder) -> ServerBuilder {
    server
        .resource(
            Resource::fixed(
                "test://static-text",
                "static-text",
                Body::text("This is the content of the static text resource.", "text/plain"),
            )
            .description("A static text resource"),
        )
        .resource(
            Resource::fixed("test://static-binary", "static-binary", Body::bytes(PNG, "image/png"))
                .description("A static image"),
        )
        .resource(
            Resource::fixed(
                "test://watched-resource",
                "watched-resource",
                Body::text("Watched content.", "text/plain"),
            )
            .description("A resource to subscribe to"),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template", |read| async move {
                let id = read.variable("id").unwrap_or_default();
                Ok(Body::text(
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string(),
                    "application/json",
                ))
            })
            .description("Data for one id")
            .mime_type("application/json")
            .complete("id", starting_with(["1", "2", "3", "42"])),
        )
}

fn prompts(server: ServerBuilder) -> ServerBuilder {
    server
        .prompt(Prompt::new("test_simple_prompt", "A simple prompt without arguments", |_| async {
            Ok(Messages::new().user(Block::text("This is a simple prompt for testing.")))
        }))
        .prompt(
            Prompt::new("test_prompt_with_arguments", "A prompt with arguments", |call| async move {
                let (arg1, arg2) =
                    (call.argument("arg1").unwrap_or_default(), call.argument("arg2").unwrap_or_default());
                Ok(Messages::new().user(Block::text(format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))))
            })
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", false)
            .complete("arg1", starting_with(["paris", "park", "party", "london"])),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource", "A prompt that embeds a resource", |call| async move {
                let uri = call.argument("resourceUri").unwrap_or("test://static-text").to_string();
                Ok(Messages::new()
                    .user(Block::embedded_text(uri, "text/plain", "This is the content of the static text resource."))
                    .user(Block::text("Please process the embedded resource above.")))
            })
            .argument("resourceUri", "The URI of the resource to embed", true),
        )
        .prompt(Prompt::new("test_prompt_with_image", "A prompt with an image", |_| async {
            Ok(Messages::new()
                .user(Block::image(PNG, "image/png"))
                .user(Block::text("Please analyze the image above.")))
        }))
        .prompt(Prompt::new(
            "test_input_required_result_prompt",
            "A prompt that asks for its context first",
            |call| async move {
                let answer = call
                    .ask("user_context", Ask::form::<PromptContext>("What context should the prompt use?")?)
                    .await?;
                let context = answer.accepted::<PromptContext>()?.map_or(String::new(), |c| c.context);
                Ok(Messages::new().user(Block::text(format!("Prompt with context: {context}"))))
            },
        ))
}

#[derive(Deserialize, JsonSchema)]
struct PromptContext {
    /// The context to use.
    context: String,
}

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
struct Greeting {
    /// A name.
    name: String,
}

/// Greets by name (the Tasks extension's synchronous fixture).
#[action(global)]
async fn greet(input: Greeting) -> Result<Content, ToolError> {
    Ok(text(format!("Hello, {}!", input.name)))
}

/// How long to compute, and what.
#[derive(Deserialize, JsonSchema)]
struct Computation {
    /// Seconds to take.
    #[serde(default = "three")]
    #[schemars(range(max = 600))]
    seconds: u64,
    /// A label for the result.
    #[serde(default)]
    label: String,
}

fn three() -> u64 {
    3
}

/// Takes `seconds`, then answers: a task for a client that declared the Tasks extension,
/// within its request for any other.
#[action(global, task = "optional", timeout = "11m")]
async fn slow_compute(input: Computation) -> Result<Content, ToolError> {
    // A call becomes a task when its handler first waits: it always does, even for 0 s
    // (a sleep of none may be ready at once, and the call is then answered in its request).
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_secs(input.seconds)).await;
    Ok(text(format!("computed {} in {} s", input.label, input.seconds)))
}

/// Fails after a second, as a tool result (`isError`): runs only as a task.
#[action(global, task = "required")]
async fn failing_job() -> Result<Content, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::failed("JOB_FAILED", "the job failed, as it always does"))
}

/// Fails after a second with a server error (its backend refused), which a task reports
/// `failed` with a JSON-RPC error: runs only as a task.
#[action(global, task = "required")]
async fn protocol_error_job() -> Result<Content, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::internal("the job's backend refused the request"))
}

/// Asks the person's name within the request, then greets them from a task: runs only as
/// a task, which starts once the name is known.
#[action(global, task = "required")]
async fn test_tool_with_task(ctx: Ctx) -> Result<Content, ToolError> {
    let question = Ask::form::<Name>("What is your name?")?.before_task();
    let name = ctx.ask("user_name", question).await?.accepted::<Name>()?;
    let name = name.map_or_else(|| "stranger".to_string(), |n| n.name);
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(text(format!("Hello, {name}: your task is done")))
}

/// A file to delete.
#[derive(Deserialize, JsonSchema)]
struct Doomed {
    /// Its name.
    filename: String,
}

/// The person's answer to a yes-or-no question.
#[derive(Deserialize, JsonSchema)]
struct YesNo {
    /// Yes or no.
    confirm: bool,
}

/// Deletes a file once the person confirms: runs only as a task, which waits for the answer.
#[action(global, task = "required")]
async fn confirm_delete(input: Doomed, ctx: Ctx) -> Result<Content, ToolError> {
    let answer = ctx.elicit::<YesNo>("confirm", format!("Delete {}?", input.filename)).await?;
    match answer {
        Some(YesNo { confirm: true }) => Ok(text(format!("deleted {}", input.filename))),
        _ => Ok(text(format!("kept {}", input.filename))),
    }
}

/// Asks two questions at once, and answers once both are: runs only as a task.
#[action(global, task = "required")]
async fn multi_input(ctx: Ctx) -> Result<Content, ToolError> {
    let questions = [
        ("name".to_string(), Ask::form::<Name>("What is your name?")?),
        ("confirm".to_string(), Ask::form::<YesNo>("Go ahead?")?),
    ];
    let answers = ctx.ask_all(questions).await?;
    Ok(text(format!("answered {} questions", answers.len())))
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    let server = Server::from_registry("toolgate-conformance")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("The fixtures of the MCP conformance suites, served by toolgate.");
    prompts(resources(server)).run_cli().await
}

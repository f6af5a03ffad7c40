//! What can be wrong with a registry, reported at start-up with source locations.

use std::fmt;

use crate::action::SourceLocation;
use crate::fsm::{BindingError, MachineError};

/// Every problem found while collecting the registry.
#[derive(thiserror::Error)]
#[error("toolgate cannot start: {} problem(s)\n{}", .problems.len(), render(.problems))]
pub struct StartupError {
    /// The problems, in the order found.
    pub problems: Vec<StartupProblem>,
}

/// The message itself: what `main` returning `Result<_, StartupError>` prints.
impl fmt::Debug for StartupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn render(problems: &[StartupProblem]) -> String {
    problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

/// One problem with the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartupProblem {
    /// Two actions register the same tool name.
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The first registration.
        first: SourceLocation,
        /// The second registration.
        second: SourceLocation,
    },
    /// Two machines share an id.
    DuplicateMachine {
        /// The id.
        machine: String,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// A machine breaks a machine rule.
    InvalidMachine {
        /// The id.
        machine: String,
        /// Where it came from.
        origin: String,
        /// Every rule it breaks.
        errors: Vec<MachineError>,
    },
    /// A machine names guards the server has no function for (a machine loaded from
    /// XState JSON; give each with `ServerBuilder::guard`).
    MissingGuards {
        /// The id.
        machine: String,
        /// Where it came from.
        origin: String,
        /// The guards without a function.
        guards: Vec<String>,
    },
    /// A machine's `entry`/`exit` names effects the server has no function for (a machine
    /// loaded from XState JSON; give each with `ServerBuilder::effect`).
    MissingEffects {
        /// The id.
        machine: String,
        /// The effects without a function.
        effects: Vec<String>,
    },
    /// `ServerBuilder::history_with_data` names a machine without a context.
    HistoryData {
        /// The machine named.
        machine: String,
        /// The machines that have a context.
        with_context: Vec<String>,
    },
    /// `--after` (or `ServerBuilder::after`) names a state that no machine moves by time.
    Delay {
        /// `[machine.]state`, as given.
        path: String,
    },
    /// A bound action names a machine nobody registered.
    UnknownMachine {
        /// The tool.
        tool: String,
        /// The missing machine id.
        machine: String,
        /// The machines that exist.
        known: Vec<String>,
        /// The action.
        location: SourceLocation,
    },
    /// A binding does not fit its machine (possible for machines loaded from JSON).
    Binding {
        /// The tool.
        tool: String,
        /// What is wrong.
        error: BindingError,
        /// The action.
        location: SourceLocation,
    },
    /// An action takes a name toolgate generates a tool under.
    ReservedName {
        /// The name.
        tool: String,
        /// The action.
        location: SourceLocation,
    },
    /// A domain was described, but no action belongs to it.
    UnknownDomain {
        /// The described domain.
        domain: String,
        /// The domains actions belong to.
        known: Vec<String>,
    },
    /// `compact` on a tool that has no machine whose initial state it could describe.
    CompactWithoutMachine {
        /// The tool.
        tool: String,
        /// The action.
        location: SourceLocation,
    },
    /// A handler asks for application state the server was not given.
    MissingState {
        /// The tool.
        tool: String,
        /// The state's type.
        type_name: String,
        /// The action.
        location: SourceLocation,
    },
    /// `#[action(creates)]` where it cannot create: no keyed machine that mints its keys,
    /// or an input that takes the key the store mints.
    Creates {
        /// The tool.
        tool: String,
        /// What is wrong, and what to do.
        problem: String,
        /// The action.
        location: SourceLocation,
    },
    /// A machine that mints its keys (`mint`), has tools, and has no tool that creates its
    /// instances (`#[action(creates)]`): none could ever exist, and every call naming one
    /// would be `NOT_FOUND`.
    NeverCreated {
        /// The machine.
        machine: String,
        /// Its key, the argument naming an instance.
        key: String,
        /// The tools bound to it.
        tools: Vec<String>,
    },
    /// An `Instance<T>` or `InstanceMut<T>` parameter that does not match the tool's
    /// machine: no keyed machine, no context, or another type.
    Context {
        /// The tool.
        tool: String,
        /// What is wrong, and what to do.
        problem: String,
        /// The action.
        location: SourceLocation,
    },
    /// An argument marked to travel as a header (`x-mcp-header`) where it cannot.
    ParamHeader {
        /// The tool.
        tool: String,
        /// What is wrong, and where.
        problem: String,
        /// The action.
        location: SourceLocation,
    },
    /// A rate limit counted `per instance` on a tool that names no instance.
    RateLimitPerInstance {
        /// The tool.
        tool: String,
        /// The action.
        location: SourceLocation,
    },
    /// `idempotency_key` names a field the input does not have.
    IdempotencyKey {
        /// The tool.
        tool: String,
        /// The field named.
        key: String,
        /// The action.
        location: SourceLocation,
    },
    /// A canonical key spelling was given for a machine that has no key.
    CanonicalKey {
        /// The machine id given.
        machine: String,
        /// The keyed machines there are.
        keyed: Vec<String>,
    },
    /// No `#[action]` is linked into the binary: nothing to serve.
    NoTools,
    /// The state-handle key cannot be used.
    HandleKey {
        /// What is wrong with it.
        problem: String,
    },
    /// A resource, resource template or prompt is declared wrongly.
    Catalog {
        /// What is wrong.
        problem: String,
    },
    /// The scopes that manage a machine's instances (`ServerBuilder::owned_instances_managed_by`)
    /// name no principal-owned machine.
    Managers {
        /// The machine they were given for.
        machine: String,
        /// Why they cannot apply.
        problem: String,
    },
    /// A transactional hook (`ServerBuilder::on_entry`, `on_exit`) names no state of a
    /// machine.
    Hook {
        /// How it was given: `on_entry("expense", "expired")`.
        given: String,
        /// Why it cannot apply.
        problem: String,
    },
    /// A history tool (`ServerBuilder::history_tool`) cannot be generated.
    HistoryTool {
        /// The machine it was asked for.
        machine: String,
        /// Why not.
        problem: String,
    },
    /// The state store cannot be opened.
    Store {
        /// Why.
        problem: String,
    },
    /// The authentication settings contradict each other.
    Authentication {
        /// What is wrong.
        problem: String,
    },
    /// A schema is not what MCP requires (`inputSchema`/`outputSchema` must be objects).
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: String,
        /// The action.
        location: SourceLocation,
    },
}

impl fmt::Display for StartupProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateTool { tool, first, second } => {
                write!(f, "tool `{tool}` is registered twice: at {first} and at {second}")
            }
            Self::DuplicateMachine { machine, first, second } => {
                write!(f, "machine `{machine}` is declared twice: at {first} and at {second}")
            }
            Self::InvalidMachine { machine, origin, errors } => {
                let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                write!(f, "machine `{machine}` ({origin}) is invalid: {}", errors.join("; "))
            }
            Self::UnknownMachine { tool, machine, known, location } => write!(
                f,
                "{location}: tool `{tool}` is bound to machine `{machine}`, which is not registered; known machines: {}",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ),
            Self::Binding { tool, error, location } => write!(f, "{location}: tool `{tool}`: {error}"),
            Self::Schema { tool, problem, location } => write!(f, "{location}: tool `{tool}`: {problem}"),
            Self::ReservedName { tool, location } => write!(
                f,
                "{location}: tool name `{tool}` is reserved: toolgate generates it for this multi-domain server"
            ),
            Self::CompactWithoutMachine { tool, location } => write!(
                f,
                "{location}: tool `{tool}` has `compact`, the description shown while its machine is in its initial state, but no machine; remove `compact` or bind the tool to a machine"
            ),
            Self::MissingState { tool, type_name, location } => write!(
                f,
                "{location}: tool `{tool}` takes `State<{type_name}>`, but the server was not given a `{type_name}`; add `.state(value)` with a `{type_name}` to the server builder (`Server::from_registry(…).state(…)`)"
            ),
            Self::IdempotencyKey { tool, key, location } => write!(
                f,
                "{location}: tool `{tool}` has `idempotency_key = \"{key}\"`, and its input has no `{key}` field; add one (a string the caller makes fresh per request)"
            ),
            Self::Creates { tool, problem, location } => {
                write!(f, "{location}: tool `{tool}` has `creates`, and {problem}")
            }
            Self::NeverCreated { machine, key, tools } => write!(
                f,
                "machine `{machine}` mints its keys (`mint`), so an instance exists only once a call creates it, and no tool does: add `creates` to the `#[action(…)]` that makes a new `{machine}` (its input takes no `{key}`: the store mints it, and the handler reads it with `ctx.instance()`); its tools: {}",
                tools.join(", ")
            ),
            Self::HistoryData { machine, with_context } => write!(
                f,
                "the history of machine `{machine}` is to keep its data, and it has none (no `context`); machines with data: {}",
                if with_context.is_empty() { "none".to_string() } else { with_context.join(", ") }
            ),
            Self::Delay { path } => write!(
                f,
                "`--after {path}=…` names no state with `after`: only a state time moves (`after: {{ \"PT15M\": \"expired\" }}`) can last longer or shorter"
            ),
            Self::MissingGuards { machine, origin, guards } => write!(
                f,
                "{origin}: machine `{machine}` names guard{} {} with no function; give each with `ServerBuilder::guard(Guard::new(\"name\", function))`",
                if guards.len() == 1 { "" } else { "s" },
                guards.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
            ),
            Self::MissingEffects { machine, effects } => write!(
                f,
                "machine `{machine}` names effect{} {} with no function; give each with `ServerBuilder::effect(\"name\", function)`",
                if effects.len() == 1 { "" } else { "s" },
                effects.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ")
            ),
            Self::Context { tool, problem, location } => write!(f, "{location}: tool `{tool}`: {problem}"),
            Self::ParamHeader { tool, problem, location } => {
                write!(f, "{location}: tool `{tool}`'s input: {problem}")
            }
            Self::RateLimitPerInstance { tool, location } => write!(
                f,
                "{location}: tool `{tool}` has a rate limit `per instance` but names no instance of a keyed machine; count it `per client` or `per tool`"
            ),
            Self::CanonicalKey { machine, keyed } => write!(
                f,
                "a canonical key spelling is given for machine `{machine}`, which has no key; keyed machines: {}",
                if keyed.is_empty() { "none".to_string() } else { keyed.join(", ") }
            ),
            Self::NoTools => f.write_str(
                "no `#[action]` is linked into this binary, so there is no tool to serve. If the actions live in a library crate, mention it once in the binary (`use my_actions as _;`): the linker drops a library nothing refers to, and its actions with it",
            ),
            Self::Authentication { problem } => f.write_str(problem),
            Self::Store { problem } => f.write_str(problem),
            Self::HistoryTool { machine, problem } => write!(f, "the history tool of machine `{machine}`: {problem}"),
            Self::Managers { machine, problem } => {
                write!(f, "`owned_instances_managed_by(\"{machine}\", …)`: {problem}")
            }
            Self::Hook { given, problem } => write!(f, "`{given}`: {problem}"),
            Self::Catalog { problem } => f.write_str(problem),
            Self::HandleKey { problem } => {
                write!(f, "{problem} (set it with ServerBuilder::handle_key or TOOLGATE_HANDLE_KEY)")
            }
            Self::UnknownDomain { domain, known } => write!(
                f,
                "domain `{domain}` is described but no action belongs to it; domains: {}",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ),
        }
    }
}

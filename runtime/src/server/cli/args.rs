//! The command line's grammar, in clap: `serve` (the default: its flags work without the
//! word) and the commands that print what a server is without serving it (`describe`,
//! `export --xstate`, `audit`). Every value is checked here, before anything is built;
//! what needs the builder (a tokens file, a JWT secret, a store) is checked in `serve`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::error::ErrorKind;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use super::ServeError;
pub(super) use super::serve_args::{CallerArgs, HTTP, LogFormat, ServeArgs, Token};
use super::sources::{Sources, variable_of};
use super::values::positive;
use crate::inspect::Format;

/// The variables `serve` reads, below every help that lists `serve`'s options.
const ENVIRONMENT: &str = "\
Environment:
  Each option can also be given as the variable its help names ([env: TOOLGATE_…]):
  the option wins over its variable, and the variable over the default. A switch's
  variable is true or false (1 or 0, yes or no, on or off); a repeatable option's is
  a comma-separated list; an empty one is not read. Also:
  TOOLGATE_HANDLE_KEY   Signs state handles (32 bytes or more); set the same one on every replica
                        (or TOOLGATE_HANDLE_KEY_FILE, a file holding it)
  TOOLGATE_HANDLE_KEYS  Keys for rotation, comma-separated: the first signs, every one verifies
  RUST_LOG              Which logs to write to stderr (default `warn`)";

/// The heading a server's own options (`ServerBuilder::run_cli_with`) are listed under,
/// unless they name their own (`#[command(next_help_heading = "…")]`).
const OWN: &str = "This server's options";

/// The whole command line: a command, or `serve`'s options alone.
// The help is laid out by hand (`verbatim_doc_comment`, lines under 100 columns): clap is
// built without `wrap_help`, and `term_width = 0` keeps each help on its flag's line.
#[derive(Debug, Parser)]
#[command(
    name = "server",
    long_about = None,
    about = "An MCP server built with toolgate. Without a command it serves (`serve`, whose options \
             follow):\nMCP over stdio, or Streamable HTTP with `--http ADDR`.",
    args_conflicts_with_subcommands = true,
    // A server's own required option is required to serve, not to `describe` it.
    subcommand_negates_reqs = true,
    term_width = 0,
    after_help = ENVIRONMENT
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

/// What the server is asked to do.
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio, or Streamable HTTP with `--http ADDR` (the default command)
    #[command(after_help = ENVIRONMENT)]
    Serve(Box<ServeArgs>),
    /// Print the machines as state diagrams (Mermaid, DOT, JSON or SVG), or what
    /// each tool costs a model in tokens (`--format cost`)
    ///
    /// Print the server's machines as state diagrams: each edge labelled with its event
    /// and the tool that fires it, each state with the tools callable in it.
    #[command(verbatim_doc_comment)]
    Describe {
        /// mermaid, dot, json, svg, or cost (tokens per tool)
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = DescribeFormat::Mermaid, hide_possible_values = true)]
        format: DescribeFormat,
    },
    /// Print the machines as XState v5 JSON (`--xstate`)
    ///
    /// Print the server's machines in another tool's format: a JSON object,
    /// machine id → machine.
    #[command(verbatim_doc_comment)]
    Export {
        /// As XState v5 machines, for XState and Stately's tools (the one format for now)
        #[arg(long, required = true)]
        xstate: bool,
    },
    /// Grade the tools against the routing checklist; fail when one fails a rule
    ///
    /// Grade every tool against the routing checklist: print the findings, and exit
    /// with a failure status when a tool fails a rule.
    ///
    /// Give it the options you serve with that say who may call (`--token`, `--tokens`,
    /// `--stdio-principal`, `--jwt-issuer`): a tool whose scopes no principal holds fails.
    #[command(verbatim_doc_comment)]
    Audit {
        /// How to print them
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = AuditFormat::Table)]
        format: AuditFormat,
        // Who may call: tokens and the stdio principal, as `serve` takes them.
        #[command(flatten)]
        callers: CallerArgs,
        /// Principals also come from this JWT issuer: a scope only it may
        /// grant is not judged
        #[arg(long, env = "TOOLGATE_JWT_ISSUER", value_name = "ISS", help_heading = HTTP, verbatim_doc_comment)]
        jwt_issuer: Option<String>,
        /// The most tokens one tool may cost a model (default 800)
        #[arg(long, value_name = "TOKENS", value_parser = positive)]
        context_budget: Option<usize>,
    },
    /// After Redis was restored from a backup, before the servers start: a new
    /// marker, and every key counter advanced so no key is minted twice
    ///
    /// After Redis was restored from a backup, and before any server starts on it:
    /// writes a new marker (a server still running refuses every call until it is
    /// restarted) and advances every key counter by a margin, so that no key minted
    /// after the backup was taken is minted again. Run it once.
    #[command(verbatim_doc_comment)]
    RedisRestored(RestoredArgs),
}

/// `describe --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DescribeFormat {
    /// Mermaid `stateDiagram-v2`, a diagram per machine (renders in GitHub Markdown)
    Mermaid,
    /// Graphviz DOT: one graph, a cluster per domain, a subgraph per machine
    Dot,
    /// The description as JSON, for tools
    Json,
    /// SVG, laid out without Graphviz
    Svg,
    /// The tokens each tool and each state's list cost a model (o200k_base)
    Cost,
}

impl From<DescribeFormat> for Format {
    fn from(format: DescribeFormat) -> Self {
        match format {
            DescribeFormat::Mermaid => Format::Mermaid,
            DescribeFormat::Dot => Format::Dot,
            DescribeFormat::Json => Format::Json,
            DescribeFormat::Svg => Format::Svg,
            DescribeFormat::Cost => Format::Cost,
        }
    }
}

/// `audit --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum AuditFormat {
    /// A row per tool, a column per rule, then each failure
    Table,
    /// `{"passed": …, "findings": [{tool, rule, verdict, detail}]}`
    Json,
}

/// `audit`'s options.
#[derive(Debug)]
pub(super) struct AuditArgs {
    /// How to print the findings.
    pub(super) format: AuditFormat,
    /// Who may call.
    pub(super) callers: CallerArgs,
    /// Whether principals also come from a JWT issuer (`--jwt-issuer`).
    pub(super) jwt_issuer: bool,
    /// The per-tool budget in tokens (`--context-budget`).
    pub(super) context_budget: Option<usize>,
    /// The options set by their variable rather than on the command line.
    pub(super) sources: Sources,
}

/// `redis-restored`'s options.
#[derive(Debug, PartialEq, Args)]
pub(super) struct RestoredArgs {
    /// The restored Redis, `redis://HOST:PORT/DB` as `serve --store`
    /// takes it (default: TOOLGATE_STORE)
    #[arg(long, env = "TOOLGATE_STORE", value_name = "STORE", verbatim_doc_comment)]
    pub(super) store: Option<String>,
    /// How far every key counter advances (default 1000000): more keys
    /// than any counter minted between the backup and the loss
    #[arg(long, env = "TOOLGATE_MINT_MARGIN", value_name = "N", value_parser = clap::value_parser!(u64).range(1..), verbatim_doc_comment)]
    pub(super) mint_margin: Option<u64>,
    /// For `rediss://` (TLS): trust only the certificate authorities in this
    /// PEM file (default: TOOLGATE_REDIS_CA, else the system's)
    #[arg(long, env = "TOOLGATE_REDIS_CA", value_name = "FILE", verbatim_doc_comment)]
    pub(super) redis_ca: Option<PathBuf>,
    /// Accept a Redis that loses what it holds when it restarts, as
    /// `serve --redis-volatile` does
    #[arg(long, env = "TOOLGATE_REDIS_VOLATILE", value_parser = BoolishValueParser::new(), verbatim_doc_comment)]
    pub(super) redis_volatile: bool,
    /// The options set by their variable rather than on the command line.
    #[arg(skip)]
    pub(super) sources: Sources,
}

/// What the command line asks for.
#[derive(Debug)]
pub(super) enum Invocation {
    /// `serve`, or `serve`'s options alone.
    Serve(Box<ServeArgs>),
    /// `describe`.
    Describe(Format),
    /// `export --xstate`.
    ExportXstate,
    /// `audit`.
    Audit(AuditArgs),
    /// `redis-restored`.
    RedisRestored(RestoredArgs),
    /// `--help` (or `help`): clap's text, for stdout.
    Help(clap::Error),
}

/// How a server adds options of its own to the command line: `augment_args` of its
/// `clap::Args` (`ServerBuilder::run_cli_with`), or nothing.
pub(super) type OwnOptions = fn(clap::Command) -> clap::Command;

/// The command line's grammar: toolgate's, with the server's `own` options among
/// `serve`'s (under their heading), and no variable's value ever shown in a help (a
/// store's URL or a token may be in one).
fn grammar(own: OwnOptions) -> clap::Command {
    let hidden = |command: clap::Command| command.mut_args(variable_below);
    let command = own(Cli::command().next_help_heading(OWN)).next_help_heading(None);
    hidden(command)
        .mut_subcommand("serve", |serve| hidden(own(serve.next_help_heading(OWN)).next_help_heading(None)))
        .mut_subcommand("redis-restored", hidden)
        .mut_subcommand("audit", hidden)
}

/// `arg` with its variable on a line of its own below its help (`[env: TOOLGATE_HTTP]`):
/// where clap writes it, at the end of the help's last line, the hand-laid help outgrows
/// 100 columns. Never with the variable's value: a secret may be in one. A variable set
/// to nothing (`TOOLGATE_HTTP=`, as a compose file unsets one) is not read.
fn variable_below(arg: clap::Arg) -> clap::Arg {
    let Some(variable) = arg.get_env().map(|variable| variable.to_string_lossy().into_owned()) else {
        return arg;
    };
    let arg = match std::env::var_os(&variable) {
        Some(value) if value.is_empty() => arg.env(None),
        _ => arg,
    };
    let below = |help: Option<&clap::builder::StyledStr>| match help.map(ToString::to_string) {
        Some(help) if !help.is_empty() => format!("{help}\n[env: {variable}]"),
        _ => format!("[env: {variable}]"),
    };
    let (help, long_help) = (below(arg.get_help()), arg.get_long_help().map(|long| below(Some(long))));
    let arg = arg.help(help).hide_env(true);
    match long_help {
        Some(long_help) => arg.long_help(long_help),
        None => arg,
    }
}

/// Reads the command line, `args` with the program first, as `std::env::args_os` gives it,
/// and the environment's variables for the options it does not give. Returns what it asks
/// for, and (but for a help) the matches the server's `own` options are read from:
/// `serve`'s, or for another command the variables' and defaults alone.
pub(super) fn parse<I, T>(args: I, own: OwnOptions) -> Result<(Invocation, Option<ArgMatches>), ServeError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut command = grammar(own);
    let matches = match command.try_get_matches_from_mut(&args) {
        Ok(matches) => matches,
        Err(help) if !help.use_stderr() => return Ok((Invocation::Help(help), None)),
        Err(error) => return Err(refused(error, &mut command, &args)),
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|error| rendered(&error.format(&mut command)))?;
    let serve_matches = match matches.subcommand() {
        Some(("serve", serve)) => serve.clone(),
        _ => matches.clone(),
    };
    let sources = |command: &clap::Command, name: Option<&str>| {
        let command = name.and_then(|name| command.find_subcommand(name)).unwrap_or(command);
        let matches = name.and_then(|name| matches.subcommand_matches(name)).unwrap_or(&matches);
        Sources::of(command, matches)
    };
    let invocation = match cli.command {
        None => Invocation::Serve(checked(
            Box::new(ServeArgs { sources: sources(&command, None), ..cli.serve }),
            &mut command,
        )?),
        Some(Command::Serve(serve)) => {
            let sources = sources(&command, Some("serve"));
            Invocation::Serve(checked(Box::new(ServeArgs { sources, ..*serve }), &mut command)?)
        }
        Some(Command::Describe { format }) => Invocation::Describe(format.into()),
        // `--xstate` is required: clap refuses `export` alone.
        Some(Command::Export { xstate: _ }) => Invocation::ExportXstate,
        Some(Command::Audit { format, callers, jwt_issuer, context_budget }) => {
            let sources = sources(&command, Some("audit"));
            Invocation::Audit(AuditArgs { format, callers, jwt_issuer: jwt_issuer.is_some(), context_budget, sources })
        }
        Some(Command::RedisRestored(restored)) => {
            let sources = sources(&command, Some("redis-restored"));
            Invocation::RedisRestored(RestoredArgs { sources, ..restored })
        }
    };
    Ok((invocation, Some(serve_matches)))
}

/// The server's own options, read from `matches` (`parse`'s): a value they refuse (a
/// required option not given, for a command other than `serve`) is a usage error.
pub(super) fn own_options<A: clap::Args>(matches: &ArgMatches, own: OwnOptions) -> Result<A, ServeError> {
    A::from_arg_matches(matches).map_err(|error| rendered(&error.format(&mut grammar(own))))
}

/// clap's refusal of `args`, as a usage error that always ends with the usage line (clap
/// leaves it out of errors about one value), that calls a stray word after `serve`'s
/// options what it is (clap, expecting a command there, says the "subcommand" conflicts),
/// and that names the variable a refused value came from.
fn refused(error: clap::Error, command: &mut clap::Command, args: &[OsString]) -> ServeError {
    use clap::error::{ContextKind, ContextValue};
    if error.kind() == ErrorKind::ArgumentConflict
        && let Some(ContextValue::String(word)) = error.get(ContextKind::InvalidSubcommand)
        && command.find_subcommand(word).is_none()
    {
        let word = word.clone();
        return rendered(&command.error(ErrorKind::UnknownArgument, format!("unexpected argument '{word}' found")));
    }
    let text = match variable_of(&error, command, args) {
        Some(variable) => format!("{variable}: {}", text_of(&error)),
        None => text_of(&error),
    };
    if text.contains("\nUsage: ") {
        return ServeError::Usage(text);
    }
    // The usage of the command the error is in: a command is the first argument, if any.
    let named = args.get(1).and_then(|arg| arg.to_str()).filter(|&name| name != "help");
    let usage = match named.and_then(|name| command.find_subcommand_mut(name)) {
        Some(subcommand) => subcommand.render_usage(),
        None => command.render_usage(),
    };
    ServeError::Usage(match text.rsplit_once("\n\nFor more information") {
        Some((message, more)) => format!("{message}\n\n{usage}\n\nFor more information{more}"),
        None => format!("{text}\n\n{usage}"),
    })
}

/// `serve`'s options, checked together: the options only HTTP has need `--http`.
fn checked(serve: Box<ServeArgs>, command: &mut clap::Command) -> Result<Box<ServeArgs>, ServeError> {
    let http_only = [
        ("--stateless", serve.stateless),
        ("--key-headers", serve.key_headers),
        ("--allowed-host", !serve.allowed_hosts.is_empty()),
        ("--allowed-origin", !serve.allowed_origins.is_empty()),
        ("--max-sessions", serve.max_sessions.is_some()),
        ("--max-listen-streams", serve.max_listen_streams.is_some()),
        ("--max-client-streams", serve.max_client_streams.is_some()),
        ("--request-read-timeout", serve.request_read_timeout.is_some()),
        ("--drain-delay", serve.drain_delay.is_some()),
        ("--max-client-connections", serve.max_client_connections.is_some()),
        ("--max-connections", serve.max_connections.is_some()),
        ("--session-idle-timeout", serve.session_idle_timeout.is_some()),
        ("--client-rate-limit", serve.client_rate_limit.is_some()),
        ("--token", !serve.callers.tokens.is_empty()),
        ("--require-auth", serve.require_auth),
    ];
    match http_only.iter().find(|(_, given)| *given) {
        Some((flag, _)) if serve.http.is_none() => {
            let named = serve.sources.named(flag.trim_start_matches('-'));
            let http = if named.starts_with('`') { "" } else { " (or TOOLGATE_HTTP)" };
            let message = format!("{named} needs `--http ADDR`{http}");
            Err(rendered(&command.error(ErrorKind::MissingRequiredArgument, message)))
        }
        _ => Ok(serve),
    }
}

/// A usage error found after the command line was read (a tokens file, a store, …):
/// `message`, then the usage line, as clap's own errors.
pub(super) fn usage(message: impl std::fmt::Display) -> ServeError {
    let program = std::env::args_os().next().map(PathBuf::from);
    let program = program.as_deref().and_then(std::path::Path::file_name).and_then(|name| name.to_str());
    let mut command = grammar(|command| command);
    if let Some(program) = program {
        command = command.bin_name(program);
    }
    rendered(&command.error(ErrorKind::ValueValidation, message))
}

/// clap's error as [`ServeError::Usage`].
fn rendered(error: &clap::Error) -> ServeError {
    ServeError::Usage(text_of(error))
}

/// clap's error without colours and without the leading `error: ` (`main` returning the
/// error writes `Error: ` before it).
fn text_of(error: &clap::Error) -> String {
    let text = error.render().to_string();
    text.strip_prefix("error: ").unwrap_or(&text).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::RateLimit;
    use std::time::Duration;

    fn parse_line(list: &[&str]) -> Result<Invocation, ServeError> {
        parse(std::iter::once("server").chain(list.iter().copied()), |command| command)
            .map(|(invocation, _)| invocation)
    }

    /// `serve`'s options, given with and without the word `serve`: they must agree.
    fn serve(list: &[&str]) -> Result<ServeArgs, String> {
        let serve_of = |invocation: Result<Invocation, ServeError>| match invocation {
            Ok(Invocation::Serve(serve)) => Ok(*serve),
            Ok(other) => panic!("{list:?}: not `serve`: {other:?}"),
            Err(error) => Err(error.to_string()),
        };
        let bare = serve_of(parse_line(list));
        let worded = serve_of(parse_line(&[&["serve"], list].concat()));
        assert_eq!(bare.is_ok(), worded.is_ok(), "{list:?}: {bare:?} / {worded:?}");
        if let (Ok(bare), Ok(worded)) = (&bare, &worded) {
            assert_eq!(bare, worded, "{list:?}");
        }
        bare
    }

    #[test]
    fn parses_the_modes_and_options() {
        assert_eq!(serve(&[]).unwrap(), ServeArgs::default());
        let hosts = serve(&["--http", "0.0.0.0:80", "--allowed-host", "a.example", "--allowed-host", "b.example"]);
        assert_eq!(hosts.unwrap().allowed_hosts, ["a.example", "b.example"]);
        let http = serve(&["--http", "127.0.0.1:0", "--stateless", "--handle-ttl", "5"]).unwrap();
        assert!(matches!(http.http, Some(a) if a.port() == 0));
        assert_eq!((http.stateless, http.handle_ttl), (true, Some(Duration::from_secs(5))));
        for (written, meant) in [("7s", Duration::from_secs(7)), ("250ms", Duration::from_millis(250))] {
            let idle = serve(&["--http", "127.0.0.1:0", "--session-idle-timeout", written]).unwrap();
            assert_eq!(idle.session_idle_timeout, Some(meant));
        }
        assert!(matches!(parse_line(&["--help"]), Ok(Invocation::Help(_))));
        assert!(matches!(parse_line(&["-h"]), Ok(Invocation::Help(_))));
        let limited = serve(&["--http", "127.0.0.1:0", "--client-rate-limit", "600/minute"]).unwrap();
        assert_eq!(
            limited.client_rate_limit,
            Some(RateLimit { calls: 600, per_ms: 60_000, per: crate::action::RatePer::Client })
        );
        let everything = serve(&[
            "--http",
            "127.0.0.1:8080",
            "--max-sessions",
            "10",
            "--token",
            "clerk=s3cret=with=equals",
            "--token",
            " auditor =t0ken",
            "--require-auth",
            "--store",
            "memory",
            "--lease-ttl",
            "500ms",
            "--challenge-ttl",
            "30s",
            "--otp-outbox",
            "/tmp/otp.jsonl",
            "--authorization-server",
            "https://a.example",
            "--authorization-server",
            "https://b.example",
            "--stdio-principal",
            "ops",
        ])
        .unwrap();
        assert_eq!(everything.max_sessions, Some(10));
        let tokens: Vec<(&str, &str)> =
            everything.callers.tokens.iter().map(|t| (t.principal.as_str(), t.secret.as_str())).collect();
        assert_eq!(tokens, [("clerk", "s3cret=with=equals"), ("auditor", "t0ken")]);
        assert_eq!(
            (everything.store.as_deref(), everything.lease_ttl),
            (Some("memory"), Some(Duration::from_millis(500)))
        );
        assert_eq!(everything.challenge_ttl, Some(Duration::from_secs(30)));
        assert_eq!(everything.otp_outbox.as_deref(), Some(std::path::Path::new("/tmp/otp.jsonl")));
        assert_eq!(everything.authorization_servers, ["https://a.example", "https://b.example"]);
        assert!(everything.require_auth);
        assert_eq!(everything.callers.stdio_principal.as_deref(), Some("ops"));
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        for (line, expected) in [
            (&["--http"][..], "a value is required for '--http <ADDR>'"),
            (&["--http", "localhost"][..], "invalid value 'localhost' for '--http <ADDR>': not a socket address"),
            (&["--stdio"][..], "unexpected argument '--stdio'"),
            (&["--http", "127.0.0.1:1", "x"][..], "unexpected argument 'x'"),
            (&["--stateless"][..], "`--stateless` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--http", "127.0.0.1:2"][..], "'--http <ADDR>' cannot be used multiple times"),
            (
                &["--http", "127.0.0.1:1", "--stateless", "--stateless"][..],
                "'--stateless' cannot be used multiple times",
            ),
            (&["--store", "memory", "--store", "memory"][..], "'--store <STORE>' cannot be used multiple times"),
            (&["--handle-ttl", "0"][..], "not a duration above 0"),
            (&["--handle-ttl", "0ms"][..], "not a duration above 0"),
            (&["--handle-ttl", "5m"][..], "invalid value '5m' for '--handle-ttl <SECONDS>': not a duration"),
            (&["--max-sessions", "10"][..], "`--max-sessions` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--max-sessions", "x"][..], "'--max-sessions <N>': not a whole number"),
            (&["--client-rate-limit", "5/second"][..], "`--client-rate-limit` needs `--http ADDR`"),
            (&["--token", "clerk=s3cret"][..], "`--token` needs `--http ADDR`"),
            (&["--require-auth"][..], "`--require-auth` needs `--http ADDR`"),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "600"][..], "e.g. \"30/minute\""),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "0/minute"][..], "e.g. \"30/minute\""),
            (
                &["--http", "127.0.0.1:1", "--client-rate-limit", "5/week"][..],
                "'--client-rate-limit <N/UNIT>': `5/week`",
            ),
            (&["--http", "127.0.0.1:1", "--client-rate-limit", "5/second per tool"][..], "always counts per client"),
        ] {
            for worded in [false, true] {
                let line = if worded { [&["serve"], line].concat() } else { line.to_vec() };
                let error = parse_line(&line).expect_err("must fail").to_string();
                assert!(error.contains(expected) && error.contains("Usage:"), "{line:?}: {error}");
                assert!(!error.starts_with("error:"), "{line:?}: {error}");
            }
        }
    }

    #[test]
    fn a_bad_token_is_refused_without_showing_its_secret() {
        for bad in ["s3cret-alone", "=s3cret", "clerk="] {
            let error = parse_line(&["--http", "127.0.0.1:1", "--token", bad]).expect_err("must fail").to_string();
            assert!(error.contains("`--token`: a token is `PRINCIPAL=SECRET`") && error.contains("Usage:"), "{error}");
            assert!(!error.contains("s3cret"), "{error}");
        }
        let token = Token { principal: "clerk".into(), secret: "s3cret".into() };
        assert!(!format!("{token:?}").contains("s3cret"));
    }

    #[test]
    fn parses_the_commands_that_print_the_server() {
        let describe = |line: &[&str]| match parse_line(line) {
            Ok(Invocation::Describe(format)) => format,
            other => panic!("{line:?}: {other:?}"),
        };
        assert_eq!(describe(&["describe"]), Format::Mermaid);
        for (name, format) in [
            ("mermaid", Format::Mermaid),
            ("dot", Format::Dot),
            ("json", Format::Json),
            ("svg", Format::Svg),
            ("cost", Format::Cost),
        ] {
            assert_eq!(describe(&["describe", "--format", name]), format);
            assert_eq!(Format::parse(name), Some(format), "the two spellings of `{name}` agree");
        }
        assert!(matches!(parse_line(&["export", "--xstate"]), Ok(Invocation::ExportXstate)));
        let Ok(Invocation::RedisRestored(restored)) =
            parse_line(&["redis-restored", "--store", "redis://127.0.0.1:6379/0", "--mint-margin", "5000"])
        else {
            panic!("`redis-restored` is a command")
        };
        assert_eq!((restored.store.as_deref(), restored.mint_margin), (Some("redis://127.0.0.1:6379/0"), Some(5000)));
        assert!(matches!(
            parse_line(&["audit"]),
            Ok(Invocation::Audit(AuditArgs { format: AuditFormat::Table, jwt_issuer: false, .. }))
        ));
        assert!(matches!(
            parse_line(&["audit", "--format", "json"]),
            Ok(Invocation::Audit(AuditArgs { format: AuditFormat::Json, .. }))
        ));
        // Who may call, as `serve` takes it (`--token` needs no `--http` here: nothing is served).
        let Ok(Invocation::Audit(audit)) = parse_line(&[
            "audit",
            "--token",
            "clerk=s3cret",
            "--tokens",
            "tokens.toml",
            "--stdio-principal",
            "ops",
            "--jwt-issuer",
            "https://issuer.example",
        ]) else {
            panic!("audit with who may call parses")
        };
        assert_eq!(audit.callers.tokens.len(), 1);
        assert_eq!(audit.callers.tokens_file.as_deref(), Some(std::path::Path::new("tokens.toml")));
        assert_eq!(audit.callers.stdio_principal.as_deref(), Some("ops"));
        assert!(audit.jwt_issuer);
        for help in [&["describe", "--help"][..], &["serve", "-h"], &["help", "audit"]] {
            assert!(matches!(parse_line(help), Ok(Invocation::Help(_))), "{help:?}");
        }
        for (line, expected) in [
            (&["export"][..], "--xstate"),
            (&["describe", "--format", "png"][..], "invalid value 'png' for '--format <FORMAT>'"),
            (&["audit", "--format", "yaml"][..], "invalid value 'yaml' for '--format <FORMAT>'"),
            (&["describe", "--http", "127.0.0.1:1"][..], "unexpected argument '--http'"),
            (&["--store", "memory", "describe"][..], "the subcommand 'describe' cannot be used with '--store <STORE>'"),
            (&["frobnicate"][..], "unrecognized subcommand 'frobnicate'"),
        ] {
            let error = parse_line(line).expect_err("must fail").to_string();
            assert!(error.contains(expected) && error.contains("Usage:"), "{line:?}: {error}");
        }
        let export = parse_line(&["export"]).expect_err("must fail").to_string();
        assert!(export.contains("required"), "{export}");
    }

    #[test]
    fn clap_accepts_the_grammar() {
        grammar(|command| command).debug_assert();
    }

    /// Every option of `serve` and `redis-restored` has its variable, `TOOLGATE_` and its
    /// name (but `--token`'s, TOOLGATE_TOKENS as before, and so `--tokens`'s).
    #[test]
    fn every_option_has_its_variable() {
        let command = grammar(|command| command);
        for name in ["serve", "redis-restored"] {
            let subcommand = command.find_subcommand(name).unwrap();
            for arg in subcommand.get_arguments().filter(|arg| arg.get_id() != "help") {
                let long = arg.get_long().unwrap();
                let expected = match long {
                    "token" => "TOOLGATE_TOKENS".to_string(),
                    "tokens" => "TOOLGATE_TOKENS_FILE".to_string(),
                    long => format!("TOOLGATE_{}", long.to_uppercase().replace('-', "_")),
                };
                assert_eq!(arg.get_env().and_then(|v| v.to_str()), Some(expected.as_str()), "{name} --{long}");
            }
        }
    }

    /// The help is laid out by hand, for 100 columns (see [`Cli`]).
    #[test]
    fn every_help_fits_in_100_columns() {
        let mut command = grammar(|command| command).bin_name("invoice");
        command.build();
        let mut helps = vec![command.render_help(), command.render_long_help()];
        for subcommand in command.get_subcommands_mut() {
            helps.extend([subcommand.render_help(), subcommand.render_long_help()]);
        }
        for help in helps.iter().map(ToString::to_string) {
            for line in help.lines() {
                assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
            }
        }
    }
}

//! Where each option's value came from: the command line, or the environment variable its
//! help names (`TOOLGATE_HTTP` for `--http`). The option wins over its variable (clap reads
//! a variable only for an option not given), so a message about a value names what the
//! user wrote: `--store nowhere`, or `TOOLGATE_STORE=nowhere`.

use std::ffi::OsString;

use clap::ArgMatches;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;

/// The options whose value came from their variable: `(long name, variable)`.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Sources(Vec<(String, String)>);

impl Sources {
    /// The options of `command` that `matches` (its matches) took from their variable.
    pub(super) fn of(command: &clap::Command, matches: &ArgMatches) -> Self {
        let from_environment = command.get_arguments().filter_map(|arg| {
            let (long, variable) = (arg.get_long()?, arg.get_env()?);
            let source = matches.value_source(arg.get_id().as_str());
            (source == Some(ValueSource::EnvVariable))
                .then(|| (long.to_string(), variable.to_string_lossy().into_owned()))
        });
        Self(from_environment.collect())
    }

    /// The variable that set option `long`, if one did.
    fn variable(&self, long: &str) -> Option<&str> {
        self.0.iter().find(|(given, _)| given == long).map(|(_, variable)| variable.as_str())
    }

    /// Option `long` with `value`, as the user wrote it: `` `--store URL` ``, or
    /// `` `TOOLGATE_STORE=URL` `` when its variable gave it.
    pub(super) fn given(&self, long: &str, value: impl std::fmt::Display) -> String {
        match self.variable(long) {
            Some(variable) => format!("`{variable}={value}`"),
            None => format!("`--{long} {value}`"),
        }
    }

    /// Option `long` (a switch, or one whose value a message does not show): `` `--stateless` ``,
    /// or `` TOOLGATE_STATELESS (`--stateless`) `` when its variable set it.
    pub(super) fn named(&self, long: &str) -> String {
        match self.variable(long) {
            Some(variable) => format!("{variable} (`--{long}`)"),
            None => format!("`--{long}`"),
        }
    }
}

/// The variable a value clap refused came from, when it came from the environment: the
/// option the error names (clap's context, or the message of a parser of ours, which names
/// it in backticks) is not on the command line `args`, and its variable is set.
pub(super) fn variable_of(error: &clap::Error, command: &clap::Command, args: &[OsString]) -> Option<String> {
    if !matches!(error.kind(), ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8) {
        return None;
    }
    let named = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.clone(),
        _ => error.to_string(),
    };
    let after = named.split("--").nth(1)?;
    let long = after.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next()?;
    let (flag, with_value) = (format!("--{long}"), format!("--{long}="));
    if args.iter().any(|arg| arg.to_str().is_some_and(|arg| arg == flag || arg.starts_with(&with_value))) {
        return None;
    }
    let arguments = command.get_arguments().chain(command.get_subcommands().flat_map(clap::Command::get_arguments));
    let variable = arguments.filter(|arg| arg.get_long() == Some(long)).find_map(clap::Arg::get_env)?;
    std::env::var_os(variable).is_some().then(|| variable.to_string_lossy().into_owned())
}

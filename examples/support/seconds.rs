//! An example's own command-line option, taken out before toolgate reads the rest
//! (`Server::run_cli_from`).

use std::time::Duration;

/// Takes `flag VALUE` out of `args`: its value, if it is there. A flag without a value
/// ends the process with a usage error (status 2).
#[allow(dead_code)] // not every example that shares this file takes one
pub(crate) fn take_value(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    let Some(value) = args.get(at + 1).cloned() else {
        eprintln!("{flag} takes a value");
        std::process::exit(2);
    };
    args.drain(at..at + 2);
    Some(value)
}

/// Takes `flag SECONDS` out of `args`: its value, or `default` when it is absent. A value
/// that is not a number of seconds ends the process with a usage error (status 2).
pub(crate) fn take_seconds(args: &mut Vec<String>, flag: &str, default: Duration) -> Duration {
    let Some(at) = args.iter().position(|a| a == flag) else { return default };
    let seconds = args.get(at + 1).and_then(|s| s.parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0);
    let Some(seconds) = seconds else {
        eprintln!("{flag} takes a number of seconds");
        std::process::exit(2);
    };
    args.drain(at..at + 2);
    Duration::from_secs_f64(seconds)
}

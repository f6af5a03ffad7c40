//! An example's own command-line option, taken out before toolgate reads the rest
//! (`Server::run_cli_from`).

use std::time::Duration;

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

//! The values the command line's flags take, each parsed and checked with a message that
//! says what to write: addresses, durations, delays, counts, rates.

use std::net::SocketAddr;
use std::time::Duration;

use crate::action::RateLimit;

/// `--http`'s address.
pub(super) fn socket_address(value: &str) -> Result<SocketAddr, String> {
    value.parse().map_err(|e| format!("not a socket address ({e}); e.g. `127.0.0.1:8080`"))
}

/// A duration above zero: whole seconds (`30`, `30s`) or milliseconds (`250ms`), so a test
/// can run a server whose handles or sessions expire within a blink.
pub(super) fn duration(value: &str) -> Result<Duration, String> {
    let (number, from): (&str, fn(u64) -> Duration) = match value.strip_suffix("ms") {
        Some(ms) => (ms, Duration::from_millis),
        None => (value.strip_suffix('s').unwrap_or(value), Duration::from_secs),
    };
    number
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .map(from)
        .ok_or_else(|| "not a duration above 0 (seconds, or e.g. `250ms`)".to_string())
}

/// `--after [MACHINE.]STATE=DURATION`: the duration as `2s`/`250ms` or ISO-8601 (`PT15M`).
pub(super) fn delay(value: &str) -> Result<crate::registry::DelayOverride, String> {
    // An entry of TOOLGATE_AFTER's list may have spaces around it.
    let value = value.trim();
    let (path, length) = value.split_once('=').ok_or("write `STATE=DURATION` or `MACHINE.STATE=DURATION`")?;
    let (machine, state) = match path.split_once('.') {
        Some((machine, state)) => (Some(machine.to_string()), state.to_string()),
        None => (None, path.to_string()),
    };
    if state.is_empty() || machine.as_deref() == Some("") {
        return Err("write `STATE=DURATION` or `MACHINE.STATE=DURATION`".into());
    }
    let after_ms = match duration(length) {
        Ok(duration) => duration.as_millis().min(u128::from(u64::MAX)) as u64,
        Err(_) => toolgate_machine::grammar::parse_iso_duration_ms(length)
            .map_err(|_| format!("`{length}` is not a duration: write `2s`, `250ms` or an ISO-8601 `PT15M`"))?,
    };
    Ok(crate::registry::DelayOverride { machine, state, after_ms })
}

/// One entry of a repeatable option (a host, an origin, a URL), given once or in its
/// variable's comma-separated list (`a.example, b.example`): the spaces around it are not
/// part of it, and it is not empty.
pub(super) fn listed(value: &str) -> Result<String, String> {
    match value.trim() {
        "" => Err("an empty entry (a list's entries are separated by single commas)".into()),
        entry => Ok(entry.to_string()),
    }
}

/// A whole number above zero.
pub(super) fn positive(value: &str) -> Result<usize, String> {
    let number = value.parse::<u64>().ok().filter(|&n| n > 0).ok_or("not a whole number above 0")?;
    Ok(usize::try_from(number).unwrap_or(usize::MAX))
}

/// `--client-rate-limit N/UNIT`: a rate alone, since the server-wide limit always counts per
/// client address.
pub(super) fn client_rate_limit(value: &str) -> Result<RateLimit, String> {
    let rate = RateLimit::parse(value)?;
    if value.contains(" per ") {
        return Err(
            "the server-wide limit always counts per client address; write only the rate, e.g. `600/minute`".into()
        );
    }
    Ok(rate)
}

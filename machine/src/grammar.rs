//! The small grammars an `#[action]` and the command line share: rates
//! (`rate_limit = "30/minute per client"`, `--client-rate-limit 600/minute`) and
//! durations (`timeout = "30s"`). Parsed here once, so the macro's compile error and the
//! runtime's start-up error say the same thing.

use std::fmt;

/// What a declared rate limit counts per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RatePer {
    /// Each caller: the authenticated principal where there is one, else the client's
    /// network address as the socket reports it (stdio: the one connection). The default:
    /// one caller cannot use up another's allowance.
    #[default]
    Client,
    /// Each instance of the tool's keyed machine (`per instance`: each invoice).
    Instance,
    /// The whole tool, every caller together (`per tool`): protects what the tool calls.
    Tool,
}

impl RatePer {
    /// The words after `per` in the grammar.
    pub fn keyword(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Instance => "instance",
            Self::Tool => "tool",
        }
    }
}

/// At most `calls` calls in any window of `per_ms` milliseconds, counted `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    /// How many calls (above zero).
    pub calls: u32,
    /// The window, in milliseconds.
    pub per_ms: u64,
    /// What the limit counts per.
    pub per: RatePer,
}

/// The units a rate's window may be written in, with their length in milliseconds.
const RATE_UNITS: [(&str, u64); 4] = [("second", 1_000), ("minute", 60_000), ("hour", 3_600_000), ("day", 86_400_000)];

/// The rate grammar in words, for error messages.
pub const RATE_GRAMMAR: &str = "write calls per `second`, `minute`, `hour` or `day`, optionally followed by `per client` (the default), `per instance` or `per tool`, e.g. \"30/minute\" or \"5/second per tool\"";

impl Rate {
    /// Parses `30/minute`, `30/minute per client`, `5/second per tool`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let wrong = || format!("`{text}` is not a rate; {RATE_GRAMMAR}");
        let (rate, per) = match text.split_once(" per ") {
            Some((rate, per)) => (rate, Some(per.trim())),
            None => (text, None),
        };
        let (calls, unit) = rate.split_once('/').ok_or_else(wrong)?;
        let calls: u32 = calls.trim().parse().ok().filter(|&n| n > 0).ok_or_else(wrong)?;
        let unit = unit.trim();
        let per_ms = RATE_UNITS.iter().find(|(name, _)| *name == unit).map(|(_, ms)| *ms).ok_or_else(wrong)?;
        let per = match per {
            None | Some("client") => RatePer::Client,
            Some("instance") => RatePer::Instance,
            Some("tool") => RatePer::Tool,
            Some(_) => return Err(wrong()),
        };
        Ok(Self { calls, per_ms, per })
    }

    /// "30 calls a minute", "1 call every 1500 ms".
    pub fn in_words(&self) -> String {
        let calls = format!("{} call{}", self.calls, if self.calls == 1 { "" } else { "s" });
        match RATE_UNITS.iter().find(|(_, ms)| *ms == self.per_ms) {
            Some(("hour", _)) => format!("{calls} an hour"),
            Some((unit, _)) => format!("{calls} a {unit}"),
            None => format!("{calls} every {} ms", self.per_ms),
        }
    }
}

impl fmt::Display for Rate {
    /// As written in `#[action(rate_limit = …)]`, always with its `per`:
    /// `30/minute per client`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match RATE_UNITS.iter().find(|(_, ms)| *ms == self.per_ms) {
            Some((unit, _)) => write!(f, "{}/{unit}", self.calls)?,
            None => write!(f, "{}/{}ms", self.calls, self.per_ms)?,
        }
        write!(f, " per {}", self.per.keyword())
    }
}

/// The duration grammar in words, for error messages.
pub const DURATION_GRAMMAR: &str = "write a whole number of `ms`, `s` or `m` above zero, e.g. \"30s\"";

/// Parses a duration `500ms`, `30s`, `2m` into milliseconds (above zero).
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "ms" => Some(1),
        "s" => Some(1_000),
        "m" => Some(60_000),
        _ => None,
    };
    scale
        .zip(number.parse::<u64>().ok())
        .and_then(|(scale, n)| n.checked_mul(scale))
        .filter(|&ms| ms > 0)
        .ok_or_else(|| format!("`{text}` is not a duration; {DURATION_GRAMMAR}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_and_without_their_scope() {
        assert_eq!(Rate::parse("30/minute"), Ok(Rate { calls: 30, per_ms: 60_000, per: RatePer::Client }));
        assert_eq!(Rate::parse("5/second per tool"), Ok(Rate { calls: 5, per_ms: 1_000, per: RatePer::Tool }));
        assert_eq!(Rate::parse("2/day per instance").map(|r| r.per), Ok(RatePer::Instance));
        for bad in ["", "30", "0/minute", "x/minute", "30/fortnight", "30/minute per flow", "30/minute per"] {
            assert!(Rate::parse(bad).unwrap_err().contains(RATE_GRAMMAR), "{bad}");
        }
    }

    #[test]
    fn rates_say_themselves_as_written() {
        let rate = Rate::parse("30/minute").unwrap();
        assert_eq!(rate.to_string(), "30/minute per client");
        assert_eq!(Rate::parse(&rate.to_string()), Ok(rate));
        assert_eq!(rate.in_words(), "30 calls a minute");
        assert_eq!(Rate::parse("1/hour").unwrap().in_words(), "1 call an hour");
    }

    #[test]
    fn durations_parse_in_three_units() {
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("30s"), Ok(30_000));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        for bad in ["", "0s", "30", "1h", "-1s", "1.5s"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }
}

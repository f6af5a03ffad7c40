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

/// The ISO-8601 duration grammar in words, for error messages.
pub const ISO_DURATION_GRAMMAR: &str = "write an ISO-8601 duration of weeks, days, hours, minutes and seconds above zero, e.g. \"PT15M\", \"PT1H30M\", \"P2D\" or \"PT0.5S\" (months and years have no fixed length)";

/// Parses an ISO-8601 duration (`PT15M`, `PT1H30M`, `P2D`, `P1W`, `PT0.5S`) into
/// milliseconds, above zero. Months and years are refused: they have no fixed length.
pub fn parse_iso_duration_ms(text: &str) -> Result<u64, String> {
    let wrong = || format!("`{text}` is not a duration; {ISO_DURATION_GRAMMAR}");
    let rest = text.strip_prefix('P').ok_or_else(wrong)?;
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) if !time.is_empty() => (date, Some(time)),
        Some(_) => return Err(wrong()),
        None => (rest, None),
    };
    let mut total: u64 = 0;
    let mut add = |part: &str, units: &[(char, u64)]| -> Option<()> {
        let mut part = part;
        let mut last = 0;
        while !part.is_empty() {
            let end = part.find(|c: char| c.is_ascii_alphabetic())?;
            let (number, unit) = (&part[..end], part[end..].chars().next()?);
            let position = units.iter().position(|(u, _)| *u == unit).filter(|&p| p >= last)?;
            last = position + 1;
            let scale = units[position].1;
            let ms = match number.split_once('.') {
                // Fractions only of seconds, to the millisecond.
                Some((whole, fraction)) if unit == 'S' && !fraction.is_empty() && fraction.len() <= 3 => {
                    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
                    let fraction: u64 = format!("{fraction:0<3}").parse().ok()?;
                    whole.checked_mul(1_000)?.checked_add(fraction)?
                }
                Some(_) => return None,
                None if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => {
                    number.parse::<u64>().ok()?.checked_mul(scale)?
                }
                None => return None,
            };
            total = total.checked_add(ms)?;
            part = &part[end + 1..];
        }
        Some(())
    };
    add(date, &[('W', 604_800_000), ('D', 86_400_000)]).ok_or_else(wrong)?;
    if let Some(time) = time {
        add(time, &[('H', 3_600_000), ('M', 60_000), ('S', 1_000)]).ok_or_else(wrong)?;
    }
    if total == 0 {
        return Err(wrong());
    }
    Ok(total)
}

/// `ms` as an ISO-8601 duration: `PT15M`, `P1DT2H`, `PT0.5S`.
pub fn iso_duration(ms: u64) -> String {
    let (days, rest) = (ms / 86_400_000, ms % 86_400_000);
    let (hours, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (seconds, millis) = (rest / 1_000, rest % 1_000);
    let mut out = String::from("P");
    if days > 0 {
        out.push_str(&format!("{days}D"));
    }
    if hours + minutes + seconds + millis > 0 {
        out.push('T');
    }
    if hours > 0 {
        out.push_str(&format!("{hours}H"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}M"));
    }
    match (seconds, millis) {
        (0, 0) => {}
        (seconds, 0) => out.push_str(&format!("{seconds}S")),
        (seconds, millis) => {
            out.push_str(format!("{seconds}.{millis:03}").trim_end_matches('0'));
            out.push('S');
        }
    }
    out
}

/// `ms` in words, largest units first: "15 minutes", "1 hour 30 minutes", "1.5 seconds".
pub fn duration_in_words(ms: u64) -> String {
    let units = [("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)];
    let mut parts = Vec::new();
    let mut rest = ms;
    for (name, size) in units {
        let n = rest / size;
        rest %= size;
        if n > 0 {
            parts.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
        }
    }
    if rest > 0 || parts.is_empty() {
        let seconds = if rest.is_multiple_of(1_000) {
            (rest / 1_000).to_string()
        } else {
            format!("{}.{:03}", rest / 1_000, rest % 1_000).trim_end_matches('0').to_string()
        };
        parts.push(format!("{seconds} second{}", if seconds == "1" { "" } else { "s" }));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations_parse_say_and_print_themselves() {
        for (text, ms, words) in [
            ("PT15M", 900_000, "15 minutes"),
            ("PT1H30M", 5_400_000, "1 hour 30 minutes"),
            ("P2D", 172_800_000, "2 days"),
            ("P1W", 604_800_000, "7 days"),
            ("PT0.5S", 500, "0.5 seconds"),
            ("PT2S", 2_000, "2 seconds"),
            ("P1DT1S", 86_401_000, "1 day 1 second"),
        ] {
            assert_eq!(parse_iso_duration_ms(text), Ok(ms), "{text}");
            assert_eq!(duration_in_words(ms), words);
            assert_eq!(parse_iso_duration_ms(&iso_duration(ms)), Ok(ms), "{text}");
        }
        for bad in ["", "P", "PT", "15M", "PT15", "P1M", "P1Y", "PT0S", "PT1M1H", "PT1.5M", "PT.S", "P-1D", "PT1.2345S"]
        {
            assert!(parse_iso_duration_ms(bad).unwrap_err().contains(ISO_DURATION_GRAMMAR), "{bad}");
        }
    }

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

//! Durations: the two grammars spec fields are written in, and the one parser of each.
//!
//! - [`parse`], the **Go grammar** as Flux restricts it: `^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`,
//!   e.g. `90s`, `5m`, `1h30m`, `1.5h`, `250ms`, at most `2562047h47m16.854775807s`. Every
//!   consumer of a timeout reads it: Flux's HelmRelease and Kustomization CRDs (that pattern),
//!   helm-controller and kustomize-controller (Go's `time.ParseDuration`, which accepts more),
//!   Helm, and `tfrs reconcile`. There is no `d`: a day is `24h`.
//! - [`parse_prometheus`], **Prometheus's grammar** (`model.ParseDuration`): whole numbers with
//!   the units `y` (365 days), `w`, `d`, `h`, `m`, `s`, `ms`, largest first, each at most once,
//!   e.g. `15d`, `1w3d`, `12h`. Only fields read by Prometheus alone (TSDB retention) use it.
//!
//! Both refuse what Go cannot hold (more than about 292 years). A bare `0` is Go's and
//! Prometheus's, but not Flux's: only [`parse_prometheus`] takes it (the command line adds it).

use std::fmt;
use std::time::Duration;

/// The pattern of [`parse`], as Flux's CRDs write it.
pub const GO_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";

/// The pattern of [`parse_prometheus`] (with `minLength: 1`: the empty string matches it).
pub const PROMETHEUS_PATTERN: &str = "^(0|([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?)$";

/// The longest duration Go represents: 2^63 - 1 nanoseconds.
const MAX_NANOS: u128 = i64::MAX as u128;

/// Which grammar a text was read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// [`parse`].
    Go,
    /// [`parse_prometheus`].
    Prometheus,
}

impl Grammar {
    fn units(self) -> &'static str {
        match self {
            Grammar::Go => "`ms`, `s`, `m` or `h`",
            Grammar::Prometheus => "`y`, `w`, `d`, `h`, `m`, `s` or `ms`",
        }
    }
}

/// What is wrong with a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Nothing at all.
    Empty,
    /// A unit (or a `.`) where a number must be.
    NoNumber,
    /// A number without its unit.
    NoUnit,
    /// A unit the grammar does not have.
    UnknownUnit(String),
    /// `1.s`, `1.` (Go grammar) or any fraction (Prometheus).
    Fraction,
    /// Prometheus: units not from the largest to the smallest, or one twice.
    Order,
    /// Longer than Go can hold.
    TooLong,
}

/// Why a text is not a duration of a grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The grammar.
    pub grammar: Grammar,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = self.grammar.units();
        match &self.problem {
            Problem::Empty => write!(f, "a duration cannot be empty"),
            Problem::NoNumber => write!(f, "expected a number before each unit"),
            Problem::NoUnit => write!(f, "a unit is required after every number ({units})"),
            Problem::UnknownUnit(unit) => write!(f, "unknown unit `{unit}` (expected {units})"),
            Problem::Fraction if self.grammar == Grammar::Prometheus => write!(f, "Prometheus durations are whole numbers"),
            Problem::Fraction => write!(f, "expected digits after the decimal point"),
            Problem::Order => write!(f, "units go from the largest to the smallest, each at most once"),
            Problem::TooLong => write!(f, "longer than Go's longest duration, `2562047h47m16s` (about 292 years)"),
        }
    }
}

impl std::error::Error for Error {}

/// Parses the Go grammar as Flux restricts it (the module docs): `90s`, `5m`, `1h30m`, `1.5h`.
///
/// # Errors
///
/// What is wrong, when `text` is not in the grammar.
pub fn parse(text: &str) -> Result<Duration, Error> {
    let fail = |problem| Error { grammar: Grammar::Go, problem };
    if text.is_empty() {
        return Err(fail(Problem::Empty));
    }
    let mut nanos: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (whole, after) = split_digits(rest);
        if whole.is_empty() {
            return Err(fail(Problem::NoNumber));
        }
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => {
                let (fraction, after) = split_digits(after);
                if fraction.is_empty() {
                    return Err(fail(Problem::Fraction));
                }
                (fraction, after)
            }
            None => ("", after),
        };
        let (unit, after) = split_unit(after);
        let per: u128 = match unit {
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(fail(Problem::NoUnit)),
            other => return Err(fail(Problem::UnknownUnit(other.to_owned()))),
        };
        nanos = whole_and_fraction(whole, fraction, per).and_then(|n| n.checked_add(nanos)).ok_or_else(|| fail(Problem::TooLong))?;
        if nanos > MAX_NANOS {
            return Err(fail(Problem::TooLong));
        }
        rest = after;
    }
    Ok(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
}

/// Parses Prometheus's grammar (the module docs): `15d`, `1w3d`, `12h`, `0`.
///
/// # Errors
///
/// What is wrong, when `text` is not in the grammar.
pub fn parse_prometheus(text: &str) -> Result<Duration, Error> {
    const UNITS: [(&str, u128); 7] = [
        ("y", 365 * 86_400_000_000_000),
        ("w", 7 * 86_400_000_000_000),
        ("d", 86_400_000_000_000),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
    ];
    let fail = |problem| Error { grammar: Grammar::Prometheus, problem };
    match text {
        "" => return Err(fail(Problem::Empty)),
        "0" => return Ok(Duration::ZERO),
        _ => {}
    }
    let mut nanos: u128 = 0;
    let mut next = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (whole, after) = split_digits(rest);
        if whole.is_empty() {
            return Err(fail(Problem::NoNumber));
        }
        if after.starts_with('.') {
            return Err(fail(Problem::Fraction));
        }
        let (unit, after) = split_unit(after);
        if unit.is_empty() {
            return Err(fail(Problem::NoUnit));
        }
        let Some(position) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err(fail(Problem::UnknownUnit(unit.to_owned())));
        };
        if position < next {
            return Err(fail(Problem::Order));
        }
        next = position + 1;
        nanos =
            whole_and_fraction(whole, "", UNITS[position].1).and_then(|n| n.checked_add(nanos)).ok_or_else(|| fail(Problem::TooLong))?;
        if nanos > MAX_NANOS {
            return Err(fail(Problem::TooLong));
        }
        rest = after;
    }
    Ok(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
}

/// What to write instead of `text` in the Go grammar, when it reads as a duration in a looser
/// sense (days, weeks, years, spaces, unit words: `1d` is `24h`, `2 hours` is `2h`).
#[must_use]
pub fn suggest(text: &str) -> Option<String> {
    let nanos = lenient(text)?;
    let suggestion = format_units(nanos, &[("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000)])?;
    (suggestion != text && parse(&suggestion).is_ok()).then_some(suggestion)
}

/// What to write instead of `text` in Prometheus's grammar (`1.5d` is `1d12h`, `30m1h` is
/// `1h30m`, `15 days` is `15d`).
#[must_use]
pub fn suggest_prometheus(text: &str) -> Option<String> {
    let nanos = lenient(text)?;
    let units = [("d", 86_400_000_000_000), ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000)];
    let suggestion = format_units(nanos, &units)?;
    (suggestion != text && parse_prometheus(&suggestion).is_ok()).then_some(suggestion)
}

/// The help for a value outside the Go grammar: Go's limit, or what to write instead.
#[must_use]
pub fn help(text: &str) -> Option<String> {
    match parse(text) {
        Err(Error { problem: Problem::TooLong, .. }) => {
            Some("Go (so Flux and Helm) cannot hold more than `2562047h` (about 292 years)".to_owned())
        }
        Err(_) => suggest(text).map(|better| {
            if lenient_units(text).is_some_and(|units| units.iter().any(|u| matches!(*u, "d" | "w" | "y"))) {
                format!("Flux and Helm read Go durations, which have no days, weeks or years: write `{better}`")
            } else {
                format!("write `{better}`")
            }
        }),
        Ok(_) => None,
    }
}

/// The help for a value outside Prometheus's grammar.
#[must_use]
pub fn help_prometheus(text: &str) -> Option<String> {
    match parse_prometheus(text) {
        Err(Error { problem: Problem::TooLong, .. }) => Some("Prometheus cannot hold more than about 292 years".to_owned()),
        Err(_) => suggest_prometheus(text).map(|better| format!("write `{better}`")),
        Ok(_) => None,
    }
}

/// `text` split after its leading ASCII digits.
fn split_digits(text: &str) -> (&str, &str) {
    text.split_at(text.bytes().take_while(u8::is_ascii_digit).count())
}

/// `text` split after its leading unit: everything up to the next digit or `.`.
fn split_unit(text: &str) -> (&str, &str) {
    // NB: digits and `.` are ASCII, so the split is on a character boundary.
    text.split_at(text.bytes().take_while(|b| !b.is_ascii_digit() && *b != b'.').count())
}

/// `whole.fraction` times `per` nanoseconds, the fraction truncated to whole nanoseconds (as
/// Go does); `None` when it does not fit.
fn whole_and_fraction(whole: &str, fraction: &str, per: u128) -> Option<u128> {
    let whole = whole.trim_start_matches('0');
    if whole.len() > 30 {
        return None;
    }
    let mut nanos = if whole.is_empty() { 0 } else { whole.parse::<u128>().ok()?.checked_mul(per)? };
    // NB: nine digits are exact for every unit down to a millisecond's millionth; Go drops the
    // rest of a longer fraction too.
    let digits = &fraction[..fraction.len().min(9)];
    if !digits.is_empty() {
        let scale = 10u128.pow(u32::try_from(digits.len()).ok()?);
        nanos = nanos.checked_add(digits.parse::<u128>().ok()? * per / scale)?;
    }
    Some(nanos)
}

/// The units of a duration written loosely, normalized (`days` is `d`), or `None`.
fn lenient_units(text: &str) -> Option<Vec<&'static str>> {
    lenient_parts(text).map(|parts| parts.into_iter().map(|(_, unit, _)| unit).collect())
}

/// A duration written loosely, in nanoseconds: numbers (decimals too) with the units of both
/// grammars or their English names, spaces allowed between parts.
fn lenient(text: &str) -> Option<u128> {
    let mut nanos: u128 = 0;
    for (whole, _, (fraction, per)) in lenient_parts(text)? {
        nanos = nanos.checked_add(whole_and_fraction(whole, fraction, per)?)?;
    }
    (nanos <= MAX_NANOS).then_some(nanos)
}

type Part<'a> = (&'a str, &'static str, (&'a str, u128));

fn lenient_parts(text: &str) -> Option<Vec<Part<'_>>> {
    const WORDS: [(&[&str], &str, u128); 7] = [
        (&["ms", "msec", "millisecond", "milliseconds"], "ms", 1_000_000),
        (&["s", "sec", "secs", "second", "seconds"], "s", 1_000_000_000),
        (&["m", "min", "mins", "minute", "minutes"], "m", 60_000_000_000),
        (&["h", "hr", "hrs", "hour", "hours"], "h", 3_600_000_000_000),
        (&["d", "day", "days"], "d", 86_400_000_000_000),
        (&["w", "week", "weeks"], "w", 7 * 86_400_000_000_000),
        (&["y", "year", "years"], "y", 365 * 86_400_000_000_000),
    ];
    let mut parts = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (whole, after) = split_digits(rest);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => split_digits(after),
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let after = after.trim_start();
        let word_length = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (word, after) = after.split_at(word_length);
        let (_, unit, per) = WORDS.iter().find(|(names, _, _)| names.contains(&word))?;
        parts.push((whole, *unit, (fraction, *per)));
        rest = after.trim_start_matches([' ', ',']);
    }
    (!parts.is_empty()).then_some(parts)
}

/// `nanos` written with `units` (largest first), zero parts left out; `None` when a remainder
/// smaller than the last unit is left.
fn format_units(nanos: u128, units: &[(&str, u128)]) -> Option<String> {
    let mut left = nanos;
    let mut text = String::new();
    for (name, per) in units {
        let count = left / per;
        if count > 0 {
            text.push_str(&format!("{count}{name}"));
            left -= count * per;
        }
    }
    if left > 0 {
        return None;
    }
    if text.is_empty() {
        text.push_str("0s");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn go_grammar_reads_what_flux_accepts() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(parse("1m1m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("2562047h47m16.854775807s"), Ok(Duration::from_nanos(i64::MAX as u64)));
        let problem = |text| parse(text).unwrap_err().problem;
        assert_eq!(problem("2562047h47m16.854775808s"), Problem::TooLong);
        assert_eq!(problem("99999999999999999999999999999999999h"), Problem::TooLong);
        assert_eq!(problem("1d"), Problem::UnknownUnit("d".into()));
        assert_eq!(problem("5"), Problem::NoUnit);
        assert_eq!(problem("0"), Problem::NoUnit);
        assert_eq!(problem(""), Problem::Empty);
        assert_eq!(problem(".5s"), Problem::NoNumber);
        assert_eq!(problem("1.s"), Problem::Fraction);
        assert_eq!(problem("-5m"), Problem::NoNumber);
        assert_eq!(problem("5 m"), Problem::UnknownUnit(" m".into()));
        assert_eq!(problem("5µs"), Problem::UnknownUnit("µs".into()));
        assert_eq!(problem("1H"), Problem::UnknownUnit("H".into()));
    }

    #[test]
    fn prometheus_grammar_is_ordered_and_whole() {
        assert_eq!(parse_prometheus("15d"), Ok(Duration::from_secs(15 * 86_400)));
        assert_eq!(parse_prometheus("1y"), Ok(Duration::from_secs(365 * 86_400)));
        assert_eq!(parse_prometheus("1w3d12h"), Ok(Duration::from_secs(10 * 86_400 + 12 * 3600)));
        assert_eq!(parse_prometheus("1m30s500ms"), Ok(Duration::from_millis(90_500)));
        assert_eq!(parse_prometheus("0"), Ok(Duration::ZERO));
        let problem = |text| parse_prometheus(text).unwrap_err().problem;
        assert_eq!(problem("30m1h"), Problem::Order);
        assert_eq!(problem("1h1h"), Problem::Order);
        assert_eq!(problem("1.5d"), Problem::Fraction);
        assert_eq!(problem("15 days"), Problem::UnknownUnit(" days".into()));
        assert_eq!(parse_prometheus("292y"), Ok(Duration::from_secs(292 * 365 * 86_400)));
        assert_eq!(problem("293y"), Problem::TooLong);
        assert_eq!(problem(""), Problem::Empty);
    }

    #[test]
    fn suggestions_name_what_to_write() {
        assert_eq!(suggest("1d").as_deref(), Some("24h"));
        assert_eq!(suggest("1d12h").as_deref(), Some("36h"));
        assert_eq!(suggest("2w").as_deref(), Some("336h"));
        assert_eq!(suggest("1.5d").as_deref(), Some("36h"));
        assert_eq!(suggest("2 hours").as_deref(), Some("2h"));
        assert_eq!(suggest("90 sec").as_deref(), Some("1m30s"));
        assert_eq!(suggest("5m"), None);
        assert_eq!(suggest("soon"), None);
        assert_eq!(suggest_prometheus("15 days").as_deref(), Some("15d"));
        assert_eq!(suggest_prometheus("1.5d").as_deref(), Some("1d12h"));
        assert_eq!(suggest_prometheus("30m1h").as_deref(), Some("1h30m"));
        assert_eq!(suggest_prometheus("15d"), None);
        assert_eq!(help("1d").as_deref(), Some("Flux and Helm read Go durations, which have no days, weeks or years: write `24h`"));
        assert_eq!(help("90 s").as_deref(), Some("write `1m30s`"));
        assert!(help("3000000h").is_some_and(|h| h.contains("2562047h")));
        assert_eq!(help("5m"), None);
        assert_eq!(help_prometheus("12h1d").as_deref(), Some("write `1d12h`"));
    }

    /// Every string of up to four characters over the grammar's alphabet: the pattern and the
    /// parser agree.
    fn agree(pattern: &str, alphabet: &[char], parser: fn(&str) -> Result<Duration, Error>) {
        let regex = regex::Regex::new(pattern).unwrap();
        let mut texts = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..4 {
            frontier = frontier.iter().flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}"))).collect();
            texts.extend(frontier.iter().cloned());
        }
        for text in texts.iter().filter(|t| !t.is_empty()) {
            assert_eq!(regex.is_match(text), parser(text).is_ok(), "{pattern} and the parser disagree on {text:?}");
        }
    }

    #[test]
    fn patterns_and_parsers_agree() {
        agree(GO_PATTERN, &['0', '1', '.', 'm', 's', 'h', 'd', ' '], parse);
        agree(PROMETHEUS_PATTERN, &['0', '1', '.', 'm', 's', 'h', 'd', 'w', 'y'], parse_prometheus);
    }
}

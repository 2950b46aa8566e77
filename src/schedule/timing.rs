//! When a schedule's runs are due: `every` (a duration, counted from the schedule's anchor, so
//! a restart does not shift the runs) or `cron` (five fields, parsed by croner) in a time zone
//! read from the host's TZif data (tzfile: `TZ` or /etc/localtime, or /usr/share/zoneinfo/NAME
//! for `tz`). Times are milliseconds since the Unix epoch. A wrong `every`, `cron` or `tz` is a
//! `WhenError`, whose words name the field (the API answers them with a 400).

use chrono::TimeZone;
use std::fmt;
use std::str::FromStr;

/// The longest `every`: a year.
const MAX_EVERY_MS: i64 = 366 * 86_400_000;

/// Why `every`, `cron` or `tz` cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum WhenError {
    /// Both `every` and `cron` were given.
    Both,
    /// Neither `every` nor `cron` was given.
    Neither,
    /// `tz` was given with `every`.
    TzWithEvery,
    /// `every` is not a whole number and a unit (as given).
    EveryShape(String),
    /// `every` is zero (as given).
    EveryZero(String),
    /// `every` is more than a year (as given).
    EveryTooLong(String),
    /// `cron` does not have five fields (how many, the expression).
    CronFields(usize, String),
    /// croner refused the expression.
    CronInvalid(String, croner::errors::CronError),
    /// `tz` is not a plain zone name (as given).
    TzName(String),
    /// The host has no zone of that name.
    TzUnknown(String),
}

impl fmt::Display for WhenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WhenError::*;
        match self {
            Both => f.write_str("give either `every` or `cron`, not both"),
            Neither => f.write_str("a schedule needs `every` (such as \"15m\") or `cron` (five fields)"),
            TzWithEvery => f.write_str("`tz` is for `cron` expressions; `every` counts real time"),
            EveryShape(text) => {
                write!(f, "`every` must be a whole number and a unit s, m, h or d (\"30s\", \"15m\"), got {text:?}")
            }
            EveryZero(text) => write!(f, "`every` must be longer than zero, got {text:?}"),
            EveryTooLong(text) => write!(f, "`every` must be at most 366d, got {text:?}"),
            CronFields(fields, expr) => write!(
                f,
                "`cron` must have five fields (minute hour day-of-month month day-of-week), got {fields} in {expr:?}"
            ),
            CronInvalid(expr, e) => write!(f, "`cron` {expr:?} is not a valid expression: {e}"),
            TzName(name) => write!(f, "`tz` must be a time zone name such as \"Europe/Paris\", got {name:?}"),
            TzUnknown(name) => write!(f, "`tz` {name:?} is not a time zone this host knows"),
        }
    }
}

impl std::error::Error for WhenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WhenError::CronInvalid(_, e) => Some(e),
            _ => None,
        }
    }
}

pub enum When {
    Every { ms: i64 },
    Cron { cron: Box<croner::Cron>, tz: tzfile::ArcTz },
}

impl When {
    /// From `every`, or `cron` with its optional `tz`; the reason when they are wrong.
    pub fn parse(every: Option<&str>, cron: Option<&str>, tz: Option<&str>) -> Result<When, WhenError> {
        match (every, cron) {
            (Some(_), Some(_)) => Err(WhenError::Both),
            (None, None) => Err(WhenError::Neither),
            (Some(_), None) if tz.is_some() => Err(WhenError::TzWithEvery),
            (Some(every), None) => Ok(When::Every { ms: parse_every(every)? }),
            (None, Some(expr)) => Ok(When::Cron { cron: Box::new(parse_cron(expr)?), tz: zone(tz)? }),
        }
    }

    /// The first due time strictly after `after`, for a schedule anchored at `anchor` (its
    /// creation). None when a cron expression never matches again.
    pub fn next_after(&self, anchor: i64, after: i64) -> Option<i64> {
        match self {
            When::Every { ms } => {
                let since = after.saturating_sub(anchor);
                if since < 0 {
                    return Some(anchor);
                }
                let periods = since / ms + 1;
                Some(anchor.saturating_add(periods.saturating_mul(*ms)))
            }
            When::Cron { cron, tz } => {
                let secs = after.div_euclid(1000);
                let start = tz.timestamp_opt(secs, 0).single()?;
                let next = cron.find_next_occurrence(&start, false).ok()?;
                next.timestamp().checked_mul(1000)
            }
        }
    }
}

impl When {
    /// The shortest time between two runs: `every` itself; for `cron`, the shortest of the
    /// next few gaps after `now` (a cron expression runs at most once a minute).
    pub fn shortest_gap_ms(&self, now: i64) -> Option<i64> {
        match self {
            When::Every { ms } => Some(*ms),
            When::Cron { .. } => {
                let mut at = self.next_after(now, now)?;
                let mut shortest: Option<i64> = None;
                for _ in 0..8 {
                    let Some(next) = self.next_after(now, at) else { break };
                    shortest = Some(shortest.map_or(next - at, |s| s.min(next - at)));
                    at = next;
                }
                shortest
            }
        }
    }
}

/// `30s`, `15m`, `1h`, `1d`: a whole number and a unit; zero and more than a year are refused.
pub fn parse_every(text: &str) -> Result<i64, WhenError> {
    let text = text.trim();
    let bad = || WhenError::EveryShape(text.to_string());
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let unit_ms = match unit.trim() {
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    match n.checked_mul(unit_ms) {
        Some(0) => Err(WhenError::EveryZero(text.to_string())),
        Some(ms) if ms <= MAX_EVERY_MS => Ok(ms),
        _ => Err(WhenError::EveryTooLong(text.to_string())),
    }
}

/// Five fields (minute hour day-of-month month day-of-week) or a nickname such as `@daily`.
fn parse_cron(expr: &str) -> Result<croner::Cron, WhenError> {
    let expr = expr.trim();
    let fields = expr.split_whitespace().count();
    if !expr.starts_with('@') && fields != 5 {
        return Err(WhenError::CronFields(fields, expr.to_string()));
    }
    croner::Cron::from_str(expr).map_err(|e| WhenError::CronInvalid(expr.to_string(), e))
}

/// The zone named by `tz` (an IANA name such as `Europe/Paris`), else the host's.
fn zone(tz: Option<&str>) -> Result<tzfile::ArcTz, WhenError> {
    let Some(name) = tz.map(str::trim) else {
        // A host without zone data (a bare container) keeps UTC.
        return Ok(tzfile::Tz::local().map(tzfile::ArcTz::new).unwrap_or_else(|_| utc()));
    };
    // Only names that stay inside the zone database: no `..`, no absolute path.
    let safe = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('/')
        && !name.split('/').any(|p| p.is_empty() || p.starts_with('.'))
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
    if !safe {
        return Err(WhenError::TzName(name.to_string()));
    }
    if name == "UTC" {
        return Ok(utc());
    }
    tzfile::ArcTz::named(name).map_err(|_| WhenError::TzUnknown(name.to_string()))
}

/// UTC without the zone database: a TZif with no transitions is all UTC.
fn utc() -> tzfile::ArcTz {
    tzfile::ArcTz::new(tzfile::Tz::from(chrono::Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_their_mistakes() {
        assert_eq!(parse_every("30s").ok(), Some(30_000));
        assert_eq!(parse_every("15m").ok(), Some(900_000));
        assert_eq!(parse_every("1h").ok(), Some(3_600_000));
        assert_eq!(parse_every("1d").ok(), Some(86_400_000));
        for bad in ["0s", "0d", "", "m", "10", "1w", "-1s", "1.5h", "400d", "99999999999999999999s"] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
        assert!(parse_every("0m").unwrap_err().to_string().contains("longer than zero"));
    }

    #[test]
    fn every_counts_from_its_anchor() {
        let w = When::Every { ms: 1000 };
        assert_eq!(w.next_after(10_000, 10_000), Some(11_000));
        assert_eq!(w.next_after(10_000, 12_500), Some(13_000));
        assert_eq!(w.next_after(10_000, 5_000), Some(10_000));
    }

    #[test]
    fn cron_in_a_zone() {
        let w = When::parse(None, Some("30 9 * * *"), Some("UTC")).unwrap_or_else(|e| panic!("{e}"));
        // 2026-01-01T00:00:00Z → 09:30 the same day.
        assert_eq!(w.next_after(0, 1_767_225_600_000), Some(1_767_225_600_000 + (9 * 3600 + 30 * 60) * 1000));
        assert!(When::parse(None, Some("61 * * * *"), None).is_err());
        let four = When::parse(None, Some("* * * *"), None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(four.contains("five fields"), "{four}");
        assert!(When::parse(None, Some("* * * * *"), Some("../etc/passwd")).is_err());
        assert!(When::parse(Some("1m"), Some("* * * * *"), None).is_err());
        assert!(When::parse(Some("1m"), None, Some("UTC")).is_err());
    }
}

//! When a schedule's runs are due: `every` (a duration, counted from the schedule's anchor, so
//! a restart does not shift the runs) or `cron` (five fields, parsed by croner) in a time zone
//! read from the host's TZif data (tzfile: `TZ` or /etc/localtime, or /usr/share/zoneinfo/NAME
//! for `tz`). Times are milliseconds since the Unix epoch.

use chrono::TimeZone;
use std::str::FromStr;

/// The longest `every`: a year.
const MAX_EVERY_MS: i64 = 366 * 86_400_000;

pub enum When {
    Every { ms: i64 },
    Cron { cron: Box<croner::Cron>, tz: tzfile::ArcTz },
}

impl When {
    /// From `every`, or `cron` with its optional `tz`; the reason when they are wrong.
    pub fn parse(every: Option<&str>, cron: Option<&str>, tz: Option<&str>) -> Result<When, String> {
        match (every, cron) {
            (Some(_), Some(_)) => Err("give either `every` or `cron`, not both".into()),
            (None, None) => Err("a schedule needs `every` (such as \"15m\") or `cron` (five fields)".into()),
            (Some(_), None) if tz.is_some() => Err("`tz` is for `cron` expressions; `every` counts real time".into()),
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

/// `30s`, `15m`, `1h`, `1d`: a whole number and a unit; zero and more than a year are refused.
pub fn parse_every(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let bad = || format!("`every` must be a whole number and a unit s, m, h or d (\"30s\", \"15m\"), got {text:?}");
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
        Some(0) => Err(format!("`every` must be longer than zero, got {text:?}")),
        Some(ms) if ms <= MAX_EVERY_MS => Ok(ms),
        _ => Err(format!("`every` must be at most 366d, got {text:?}")),
    }
}

/// Five fields (minute hour day-of-month month day-of-week) or a nickname such as `@daily`.
fn parse_cron(expr: &str) -> Result<croner::Cron, String> {
    let expr = expr.trim();
    let fields = expr.split_whitespace().count();
    if !expr.starts_with('@') && fields != 5 {
        return Err(format!(
            "`cron` must have five fields (minute hour day-of-month month day-of-week), got {fields} in {expr:?}"
        ));
    }
    croner::Cron::from_str(expr).map_err(|e| format!("`cron` {expr:?} is not a valid expression: {e}"))
}

/// The zone named by `tz` (an IANA name such as `Europe/Paris`), else the host's.
fn zone(tz: Option<&str>) -> Result<tzfile::ArcTz, String> {
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
        return Err(format!("`tz` must be a time zone name such as \"Europe/Paris\", got {name:?}"));
    }
    if name == "UTC" {
        return Ok(utc());
    }
    tzfile::ArcTz::named(name).map_err(|_| format!("`tz` {name:?} is not a time zone this host knows"))
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
        assert_eq!(parse_every("30s"), Ok(30_000));
        assert_eq!(parse_every("15m"), Ok(900_000));
        assert_eq!(parse_every("1h"), Ok(3_600_000));
        assert_eq!(parse_every("1d"), Ok(86_400_000));
        for bad in ["0s", "0d", "", "m", "10", "1w", "-1s", "1.5h", "400d", "99999999999999999999s"] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
        assert!(parse_every("0m").unwrap_err().contains("longer than zero"));
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
        assert!(When::parse(None, Some("* * * *"), None).err().unwrap_or_default().contains("five fields"));
        assert!(When::parse(None, Some("* * * * *"), Some("../etc/passwd")).is_err());
        assert!(When::parse(Some("1m"), Some("* * * * *"), None).is_err());
        assert!(When::parse(Some("1m"), None, Some("UTC")).is_err());
    }
}

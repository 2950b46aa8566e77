//! Time stamps in UTC and the one source of randomness.
//!
//! Every time stamp the daemon and the worker write (RFC 3339 with `Z`, seconds or
//! milliseconds) and the stamp inside session ids (`sess_YYYYMMDD_HHMMSS`) come from here, so
//! everything agrees on one format. Random numbers come from the operating system (they name
//! private folders and must not be guessable), with a time-keyed hash as the fallback should
//! the OS refuse.

use time::OffsetDateTime;
use time::macros::format_description;

/// The current instant in UTC.
pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// `2026-11-22T14:30:22Z`
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z")).unwrap_or_default()
}

/// `2026-11-22T14:30:22.123Z`, for log entries where order within a second matters.
pub fn rfc3339_millis(t: OffsetDateTime) -> String {
    t.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"))
        .unwrap_or_default()
}

/// `20261122_143022`, the stamp inside session ids.
pub fn compact(t: OffsetDateTime) -> String {
    t.format(format_description!("[year][month][day]_[hour][minute][second]")).unwrap_or_default()
}

pub fn now_rfc3339() -> String {
    rfc3339(now())
}

/// Milliseconds since the Unix epoch, now.
pub fn unix_ms() -> i64 {
    i64::try_from(now().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// A time in milliseconds since the Unix epoch as `rfc3339` (empty when out of range).
pub fn rfc3339_from_ms(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).map(rfc3339).unwrap_or_default()
}

/// 64 random bits from the OS.
pub fn random_u64() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_i128(now().unix_timestamp_nanos());
        h.finish()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        let at =
            |s: i64, ms: i64| OffsetDateTime::from_unix_timestamp_nanos(i128::from(s * 1000 + ms) * 1_000_000).unwrap();
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(at(951_782_400, 0)), "2000-02-29T00:00:00Z");
        assert_eq!(compact(at(1_795_357_822, 5)), "20261122_143022");
        assert_eq!(rfc3339_millis(at(1_795_357_822, 5)), "2026-11-22T14:30:22.005Z");
    }
}

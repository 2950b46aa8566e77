//! Wall-clock formatting in UTC without a date crate, and the one source of cheap randomness
//! (jitter, unguessable names, per-boot tags).
//!
//! Session ids (`sess_YYYYMMDD_HHMMSS`) and every timestamp we write (RFC 3339, `Z`) come from
//! here, so the whole daemon agrees on one format.

use std::time::{SystemTime, UNIX_EPOCH};

/// Broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

impl Utc {
    pub fn now() -> Utc {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Utc::from_unix(since.as_secs() as i64, since.subsec_millis())
    }

    /// Civil date from days since 1970-01-01 (the proleptic Gregorian algorithm).
    pub fn from_unix(secs: i64, millis: u32) -> Utc {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc {
            year,
            month,
            day,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
            millis,
        }
    }

    /// `2026-11-22T14:30:22Z`
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `2026-11-22T14:30:22.123Z`, for log entries where order within a second matters.
    pub fn rfc3339_millis(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }

    /// `20261122_143022`, the stamp inside session ids.
    pub fn compact(&self) -> String {
        format!("{:04}{:02}{:02}_{:02}{:02}{:02}", self.year, self.month, self.day, self.hour, self.minute, self.second)
    }
}

pub fn now_rfc3339() -> String {
    Utc::now().rfc3339()
}

/// 64 unpredictable-enough bits: std's randomly keyed hasher over the current time. Not for
/// cryptography; for backoff jitter, temporary names and tags.
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::Utc;

    #[test]
    fn known_dates() {
        assert_eq!(Utc::from_unix(0, 0).rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(Utc::from_unix(951_782_400, 0).rfc3339(), "2000-02-29T00:00:00Z");
        assert_eq!(Utc::from_unix(1_795_357_822, 5).compact(), "20261122_143022");
        assert_eq!(Utc::from_unix(1_795_357_822, 5).rfc3339_millis(), "2026-11-22T14:30:22.005Z");
    }
}

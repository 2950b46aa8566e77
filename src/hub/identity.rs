//! Worker identity: unguessable ids, the per-worker secret `/register` hands out, and the
//! rules for who may speak as which worker.
//!
//! A request naming a `worker_id` must carry that worker's secret (compared in constant time).
//! A bare request (no `worker_id`, the seed's shape) is accepted only while
//! `server.legacy_workers` is on, and maps only to a worker that registered bare itself, never
//! to one holding a secret. A hostname whose worker holds a secret is resumed only with that
//! secret; without it the registration is refused (409) while that worker is connected or
//! serving a session.

use crate::util::clock;
use subtle::ConstantTimeEq;

/// Why the hub would not let a request speak as a worker, or would not register one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No such worker (or no bare worker for a bare request): register first.
    #[error("{0}")]
    Unknown(String),
    /// The worker exists, but the request does not carry its secret.
    #[error("{0}")]
    WrongSecret(String),
    /// A bare request while `server.legacy_workers` is off.
    #[error("{0}")]
    BareRefused(String),
    /// The hostname belongs to a connected worker holding a secret.
    #[error("{0}")]
    HostnameTaken(String),
    /// `server.max_workers` are registered already.
    #[error("{0}")]
    Full(String),
}

/// `wkr_` and 64 random bits: not derivable from the start time or the order of arrival.
pub fn new_id() -> String {
    format!("wkr_{:016x}", clock::random_u64())
}

/// 128 random bits, as 32 hex digits.
pub fn new_secret() -> String {
    format!("{:016x}{:016x}", clock::random_u64(), clock::random_u64())
}

/// Whether two worker names are one: compared without case and white space, so `HOSTA` and
/// `hostA ` are one worker, not two that look alike in `/workers`.
pub fn same_name(a: &str, b: &str) -> bool {
    let key = |s: &str| s.chars().filter(|c| !c.is_whitespace()).flat_map(char::to_lowercase).collect::<String>();
    key(a) == key(b)
}

/// Constant time in the bytes; an empty expected secret never matches.
pub fn matches(expected: &str, given: Option<&str>) -> bool {
    match given {
        Some(g) if !expected.is_empty() => bool::from(g.as_bytes().ct_eq(expected.as_bytes())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_secrets_are_random() {
        assert_ne!(new_id(), new_id());
        assert_eq!(new_secret().len(), 32);
        assert_ne!(new_secret(), new_secret());
    }

    #[test]
    fn names_are_one_whatever_their_case_and_spaces() {
        assert!(same_name("HOSTA", "hostA "));
        assert!(same_name(" pc 01", "PC01"));
        assert!(!same_name("pc-01", "pc-02"));
    }

    #[test]
    fn matching() {
        assert!(matches("abc", Some("abc")));
        assert!(!matches("abc", Some("abd")));
        assert!(!matches("abc", None));
        assert!(!matches("", Some("")));
    }
}

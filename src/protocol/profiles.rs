//! Browser profiles a worker keeps between sessions (`options.browser_profile`), and input
//! files a person hands to a session: the one rule for each kind of name, and the wire shape a
//! worker reports its profiles in (at registration and with results) and `GET /profiles` lists.
//!
//! A profile's name becomes a folder on the worker's machine and an input's name a file in the
//! session's folder: both are checked here, by the controller and the worker alike, so neither
//! can name anything but one plain entry (no `/`, no `..`, no leading dot).

use serde::{Deserialize, Serialize};

/// The longest profile name.
pub const PROFILE_NAME_MAX: usize = 64;
/// The longest input file name.
pub const INPUT_NAME_MAX: usize = 128;

/// A name that breaks its kind's rule, with the first 80 characters of what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadName {
    #[error("a browser profile's name is 1 to {PROFILE_NAME_MAX} letters, digits, '_' or '-' (got {0:?})")]
    Profile(String),
    #[error(
        "an input file's name is 1 to {INPUT_NAME_MAX} letters, digits, '.', '_', '-' or spaces, not starting \
         with a dot — one file, not a path (got {0:?})"
    )]
    Input(String),
}

/// The first 80 characters of a refused name, for its message.
fn shown(name: &str) -> String {
    name.chars().take(80).collect()
}

/// A profile name: 1 to 64 of `A-Z a-z 0-9 _ -`.
pub fn check_profile_name(name: &str) -> Result<(), BadName> {
    let ok = (1..=PROFILE_NAME_MAX).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok { Ok(()) } else { Err(BadName::Profile(shown(name))) }
}

/// An input file's name: 1 to 128 of `A-Z a-z 0-9 . _ -` and spaces, not starting with a dot
/// or a space, not ending with a space: one plain file, never a path.
pub fn check_input_name(name: &str) -> Result<(), BadName> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ' ');
    let ok = (1..=INPUT_NAME_MAX).contains(&name.len())
        && name.chars().all(allowed)
        && !name.starts_with(['.', ' '])
        && !name.ends_with(' ');
    if ok { Ok(()) } else { Err(BadName::Input(shown(name))) }
}

/// One profile as its worker reports it (sizes and times as of the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileReport {
    pub name: String,
    #[serde(default)]
    pub size_kb: u64,
    /// When a session last ran in it (RFC 3339), if the worker knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<String>,
}

/// A row of `GET /profiles`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileInfo {
    pub name: String,
    /// The worker's hostname, and its id.
    pub worker: String,
    pub worker_id: String,
    pub connected: bool,
    /// The session running in it now, if any.
    pub in_use: Option<String>,
    pub size_kb: u64,
    pub last_used: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_entry() {
        for good in ["work", "a_b-C9", &"x".repeat(64)] {
            assert!(check_profile_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a/b", "..", "a.b", "é", &"x".repeat(65), "a b"] {
            assert!(check_profile_name(bad).is_err(), "{bad}");
        }
        for good in ["invoice.pdf", "a b.txt", "x", "data-2026_01.csv"] {
            assert!(check_input_name(good).is_ok(), "{good}");
        }
        for bad in ["", "../x", "/etc/passwd", "a/b", ".hidden", "..", " a", "a ", "a\\b", "é.pdf", &"x".repeat(129)] {
            assert!(check_input_name(bad).is_err(), "{bad}");
        }
    }
}

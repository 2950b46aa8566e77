//! `Secret`: a string that must never reach a file, a log line or an API response.
//!
//! It has no `Serialize`, its `Debug` prints a placeholder, and its bytes are overwritten when
//! dropped. Config keys, API keys and the vault's passwords and tokens are all `Secret`s; the
//! only way to the value is `expose`, and each caller hands it to exactly one place.

use serde::Deserialize;
use std::fmt;

/// A string that is never printed, serialized or left in memory after use.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself. Callers hand it to exactly one place (a socket, a worker command).
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("Secret(<empty>)") } else { f.write_str("Secret(<redacted>)") }
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // Overwrite in place (same length keeps the String valid) so the value does not
        // linger in freed memory.
        let len = self.0.len();
        self.0.replace_range(.., &"\0".repeat(len));
    }
}

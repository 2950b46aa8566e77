//! What an endpoint may tell us, bounded where its answer is read: the tokens one call reports
//! (each figure at most `MAX_CALL_TOKENS`, so no sum of them can wrap and one lying server
//! cannot make a budget's spending meaningless), and an error's message (at most
//! `MAX_ERROR_CHARS` characters, cut on a character boundary with the total length noted), so
//! a megabyte error body never reaches `session.json`, the log or a terminal.

use super::TokenUsage;
use serde_json::Value;

/// The most tokens one model call may report for each of input, output, cache reads and
/// cache writes: far beyond any real context window, far below a sum that could wrap.
pub const MAX_CALL_TOKENS: u64 = 10_000_000;

/// The characters of an endpoint's error message kept.
pub const MAX_ERROR_CHARS: usize = 2000;

/// A token count as a provider reported it: a whole number, else 0.
pub(super) fn tokens(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

impl TokenUsage {
    /// One call's usage as reported, each figure capped at `MAX_CALL_TOKENS`.
    pub(super) fn reported(input: u64, output: u64, cache_read: u64, cache_write: u64) -> TokenUsage {
        TokenUsage {
            input: input.min(MAX_CALL_TOKENS),
            output: output.min(MAX_CALL_TOKENS),
            cache_read: cache_read.min(MAX_CALL_TOKENS),
            cache_write: cache_write.min(MAX_CALL_TOKENS),
        }
    }

    /// The sum of two usages, saturating.
    pub fn plus(self, other: TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }
}

/// An endpoint's error message, at most `MAX_ERROR_CHARS` characters: a longer one is cut on a
/// character boundary and says how long it was.
pub fn bounded_message(message: &str) -> String {
    crate::util::cut_chars(message, MAX_ERROR_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_tokens_are_capped_and_sums_saturate() {
        let huge = TokenUsage::reported(u64::MAX, 5, u64::MAX, 7);
        assert_eq!(huge, TokenUsage { input: MAX_CALL_TOKENS, output: 5, cache_read: MAX_CALL_TOKENS, cache_write: 7 });
        let max = TokenUsage { input: u64::MAX, output: u64::MAX, cache_read: u64::MAX, cache_write: u64::MAX };
        assert_eq!(max.plus(huge), max);
        assert_eq!(tokens(&serde_json::json!(-3)), 0);
        assert_eq!(tokens(&serde_json::json!(1e300)), 0);
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        assert_eq!(bounded_message("short"), "short");
        let exact = "é".repeat(MAX_ERROR_CHARS);
        assert_eq!(bounded_message(&exact), exact);
        let long = "é".repeat(MAX_ERROR_CHARS + 5);
        let cut = bounded_message(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_ERROR_CHARS)));
        assert!(cut.ends_with(&format!("[message cut: {} characters in all]", MAX_ERROR_CHARS + 5)), "{cut}");
        assert!(cut.chars().count() < MAX_ERROR_CHARS + 60);
    }
}

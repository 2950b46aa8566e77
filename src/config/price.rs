//! What a model's tokens cost, for `usd` budgets: `providers.NAME.price` (or `api.price`),
//! else the list price shipped for a model name we know (Anthropic, OpenAI, Gemini), else
//! none — and then a `usd` budget on that endpoint is refused, naming the missing price.

use crate::protocol::Usage;
use serde::Deserialize;

/// US dollars per million tokens. Cache writes are counted at the input price; cache reads at
/// their own (the input price when not given).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64) -> Price {
        Price { input_per_mtok: input, output_per_mtok: output, cache_read_per_mtok: Some(cache_read) }
    }

    /// What `usage` cost.
    pub fn usd(&self, usage: &Usage) -> f64 {
        let input = (usage.input_tokens as f64 + usage.cache_creation_input_tokens as f64) * self.input_per_mtok;
        let output = usage.output_tokens as f64 * self.output_per_mtok;
        let read = usage.cache_read_input_tokens as f64 * self.cache_read_per_mtok.unwrap_or(self.input_per_mtok);
        (input + output + read) / 1_000_000.0
    }

    /// Every figure a non-negative number.
    pub fn is_valid(&self) -> bool {
        [self.input_per_mtok, self.output_per_mtok, self.cache_read_per_mtok.unwrap_or(0.0)]
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0)
    }
}

/// List prices by model-name prefix, the more specific first.
const LIST: &[(&str, Price)] = &[
    ("claude-opus-4-5", Price::new(5.0, 25.0, 0.50)),
    ("claude-opus-4", Price::new(15.0, 75.0, 1.50)),
    ("claude-sonnet-4", Price::new(3.0, 15.0, 0.30)),
    ("claude-3-7-sonnet", Price::new(3.0, 15.0, 0.30)),
    ("claude-3-5-sonnet", Price::new(3.0, 15.0, 0.30)),
    ("claude-haiku-4", Price::new(1.0, 5.0, 0.10)),
    ("claude-3-5-haiku", Price::new(0.80, 4.0, 0.08)),
    ("gpt-4o-mini", Price::new(0.15, 0.60, 0.075)),
    ("gpt-4o", Price::new(2.50, 10.0, 1.25)),
    ("gpt-4.1-nano", Price::new(0.10, 0.40, 0.025)),
    ("gpt-4.1-mini", Price::new(0.40, 1.60, 0.10)),
    ("gpt-4.1", Price::new(2.0, 8.0, 0.50)),
    ("gpt-5-nano", Price::new(0.05, 0.40, 0.005)),
    ("gpt-5-mini", Price::new(0.25, 2.0, 0.025)),
    ("gpt-5", Price::new(1.25, 10.0, 0.125)),
    ("gemini-2.5-pro", Price::new(1.25, 10.0, 0.31)),
    ("gemini-2.5-flash-lite", Price::new(0.10, 0.40, 0.025)),
    ("gemini-2.5-flash", Price::new(0.30, 2.50, 0.075)),
    ("gemini-2.0-flash", Price::new(0.10, 0.40, 0.025)),
];

/// The shipped list price of `model`, when its name starts like one we know.
pub fn list_price(model: &str) -> Option<Price> {
    let model = model.trim().to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model); // "openai/gpt-4o" on a router
    LIST.iter().find(|(prefix, _)| model.starts_with(prefix)).map(|(_, p)| *p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_have_a_list_price_and_local_ones_none() {
        assert_eq!(list_price("claude-sonnet-4-5-20250929").map(|p| p.output_per_mtok), Some(15.0));
        assert_eq!(list_price("gpt-4o-mini-2024-07-18").map(|p| p.input_per_mtok), Some(0.15));
        assert_eq!(list_price("openai/gpt-4o").map(|p| p.input_per_mtok), Some(2.50));
        assert_eq!(list_price("qwen2.5-coder-1.5b"), None);
    }

    #[test]
    fn cost_counts_each_kind_at_its_price() {
        let price = Price::new(3.0, 15.0, 0.30);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1_000_000,
        };
        assert!((price.usd(&usage) - (3.0 + 1.5 + 0.30)).abs() < 1e-9);
    }
}

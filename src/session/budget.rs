//! What a session spends against its budget (`options.budget`, `agent.budget`): tokens and
//! dollars as each model call's usage comes in, seconds of wall time since the session was
//! created (waits for a worker included, time a person held it not: a pause the model asks for
//! counts until a person acts), and what is left of them, which bounds every wait of the agent's
//! for a worker or a person. The record's `budget` shows the limits and the spending as the
//! session runs; the first limit reached is kept in `budget.exceeded`, and the session is
//! marked `ended_by: budget`.

use super::Session;
use crate::protocol::Usage;
use crate::protocol::takeover::{BudgetKind, BudgetState, EndedBy};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Tokens as a budget counts them: cache reads at a tenth, everything else whole (saturating).
pub fn weighted_tokens(u: &Usage) -> u64 {
    [u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens.div_ceil(10)]
        .into_iter()
        .fold(0u64, u64::saturating_add)
}

impl Session {
    /// Count a model call's usage: the record's sums and the budget's spending, both
    /// saturating. What the journal keeps of it is returned. A call that lands after the
    /// session ended (the report after a stop) is written to session.json at once.
    pub(super) fn count_usage(&self, usage: &Usage) -> Value {
        let mut state = self.lock();
        let record = &mut state.record;
        record.usage.add(usage);
        let llm = record.llm.clone();
        if let Some(budget) = record.budget.as_mut() {
            self.spend(budget, llm.as_ref(), usage);
        }
        let progress = json!({"progress": {"turn": record.turn, "usage": record.usage}});
        if !record.status.is_active() {
            self.unlock_and_save(state);
        }
        progress
    }

    /// Count a model call's usage against the budget (under the state lock, with the usage).
    fn spend(&self, budget: &mut BudgetState, llm: Option<&crate::protocol::LlmChoice>, usage: &Usage) {
        budget.spent.tokens = budget.spent.tokens.saturating_add(weighted_tokens(usage));
        let price = llm.and_then(|l| self.config.price(&l.name, &l.model));
        if let (Some(price), Some(usd)) = (price, budget.spent.usd.as_mut()) {
            *usd += price.usd(usage);
        }
    }

    /// The limit this session has reached, if any, with `paused` (time a person held it) left
    /// out of its seconds. The first time, it is recorded (`budget.exceeded`, `ended_by`).
    pub fn budget_reached(&self, paused: Duration) -> Option<BudgetKind> {
        let mut state = self.lock();
        let record = &mut state.record;
        let seconds = self.born.elapsed().saturating_sub(paused).as_secs();
        let budget = record.budget.as_mut()?;
        budget.spent.seconds = seconds;
        if let Some(kind) = budget.exceeded {
            return Some(kind);
        }
        let (limit, spent) = (budget.limit, budget.spent);
        let kind = if limit.tokens.is_some_and(|t| spent.tokens >= t) {
            BudgetKind::Tokens
        } else if limit.usd.zip(spent.usd).is_some_and(|(l, s)| s >= l) {
            BudgetKind::Usd
        } else if limit.seconds.is_some_and(|l| spent.seconds >= l) {
            BudgetKind::Seconds
        } else {
            return None;
        };
        budget.exceeded = Some(kind);
        record.ended_by = Some(EndedBy::Budget);
        Some(kind)
    }

    /// When the seconds budget runs out, for waits before the agent runs (the lease).
    pub(super) fn budget_deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.budget_time_left(Duration::ZERO)?)
    }

    /// What is left of the seconds budget, `paused` (time a person held the session) left out
    /// as `budget_reached` leaves it out; `None` without a seconds budget.
    pub fn budget_time_left(&self, paused: Duration) -> Option<Duration> {
        let state = self.lock();
        let limit = Duration::from_secs(state.record.budget.as_ref()?.limit.seconds?);
        Some(limit.saturating_sub(self.born.elapsed().saturating_sub(paused)))
    }

    /// The budget line for a report or a summary: which limit, what was spent.
    pub fn budget_line(&self) -> Option<String> {
        let state = self.lock();
        let budget = state.record.budget.as_ref()?;
        let kind = budget.exceeded?;
        let (spent, limit) = match kind {
            BudgetKind::Tokens => {
                (format!("{} tokens", budget.spent.tokens), budget.limit.tokens.unwrap_or(0).to_string())
            }
            BudgetKind::Usd => {
                (format!("${:.4}", budget.spent.usd.unwrap_or(0.0)), format!("${}", budget.limit.usd.unwrap_or(0.0)))
            }
            BudgetKind::Seconds => {
                (format!("{} s", budget.spent.seconds), format!("{} s", budget.limit.seconds.unwrap_or(0)))
            }
        };
        Some(format!("Ended by its {} budget: spent {spent} of {limit}.", kind.noun()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_count_a_tenth() {
        let u = Usage {
            input_tokens: 100,
            output_tokens: 50,
            cache_creation_input_tokens: 10,
            cache_read_input_tokens: 1000,
        };
        assert_eq!(weighted_tokens(&u), 260);
        assert_eq!(weighted_tokens(&Usage { cache_read_input_tokens: 1, ..Usage::default() }), 1);
        let max = Usage { input_tokens: u64::MAX, output_tokens: 1, ..Usage::default() };
        assert_eq!(weighted_tokens(&max), u64::MAX, "saturates, never wraps");
    }
}

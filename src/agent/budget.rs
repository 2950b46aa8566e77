//! Budgets (`options.budget`, `agent.budget`): once the session has spent a limit (tokens,
//! dollars, seconds; `session/budget.rs` counts them), one wrap-up call offers only the
//! session's tools that deliver and the finish, with the task restated (`focus.rs`); then the
//! session ends `finished`, `ended_by: budget`, and its report and summary say which limit and
//! what was spent. What is left of a seconds budget bounds the waits inside a turn: a tool call
//! (`dispatch.rs`), a person the model asked for who has not come (`takeover.rs`).

use super::{Agent, Turn};
use crate::protocol::LogKind;
use crate::protocol::takeover::BudgetKind;
use crate::session::AgentOutcome;
use std::time::Duration;

impl Agent {
    /// Before a turn: `Ok(Some(kind))` when this turn is the budget's wrap-up call, `Ok(None)`
    /// to go on as usual, `Err` to end (the wrap-up was made).
    pub(super) fn budget_turn(&mut self) -> Result<Option<BudgetKind>, Turn> {
        let Some(kind) = self.runner.budget_reached(self.paused_for) else { return Ok(None) };
        if self.budget_wrapped {
            return Err(self.end_by_budget());
        }
        self.budget_wrapped = true;
        let line = self.runner.budget_line().unwrap_or_default();
        self.runner.log(LogKind::System, &format!("{line} One last call to deliver what the session has."), None);
        Ok(Some(kind))
    }

    /// What is left of the seconds budget (time a person held the session left out); `None`
    /// without one.
    pub(super) fn budget_left(&self) -> Option<Duration> {
        self.runner.budget_time_left(self.paused_for)
    }

    fn end_by_budget(&mut self) -> Turn {
        let line = self.runner.budget_line().unwrap_or_default();
        self.runner.log(LogKind::System, &line, None);
        let summary = match self.walk_end() {
            Some(saved) => format!("{line} {saved}"),
            None => line,
        };
        self.write_report(&summary, None);
        Turn::End(AgentOutcome::Finished { summary })
    }

    /// A summary that says the budget ended the session, when one did.
    pub(super) fn with_budget_line(&self, summary: String) -> String {
        match self.runner.budget_line() {
            Some(line) if !summary.contains(&line) => format!("{line} {summary}"),
            _ => summary,
        }
    }
}

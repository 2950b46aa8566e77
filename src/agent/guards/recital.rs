//! `recital` (small profile, before a turn): the task, the files saved and the turn close each
//! request once a file is saved or the task is a few pages back (`RECITAL_AFTER_TOKENS`), and
//! from then on; in JSON mode every request from the first (`State::new`). Small models lose the
//! task in long contexts.
//!
//! Invariant: the recital closes the view, never the journal: the conversation on disk and
//! every later request keep what was said, not the recital.

use super::super::Agent;
use super::{Modes, Unit};
use crate::llm::Role;
use crate::protocol::Mode;
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::Recital,
    modes: Modes::ALL,
    evidence: "own 14, every request against none, two repeats: 21 → 17 of 23 runs (Anthropic, the browser \
               tasks: 9 → 6); started late as now against none, this agent (Anthropic): 12 → 11. MiniWoB, every \
               request against none, three repeats: 33 → 38 of 108 (it cost on short pages); started late, it \
               fires in 0 of 72; JSON mode, every request against late, four pairs: 55 against 49 of 144. \
               Stays: started late in the native formats, on every request in JSON mode.",
};

/// The conversation past the opening (which holds the task) at which the recital starts: a few
/// pages' worth. A short page is done before then, and a reminder there only costs.
const RECITAL_AFTER_TOKENS: u64 = 1_000;

impl Agent {
    /// The request about to be sent: the recital, once due, where our message closes it.
    pub(in crate::agent) fn recital_view(&mut self) -> Option<String> {
        if !self.recital_due() || self.messages.last().map(|m| m.role) != Some(Role::User) {
            return None;
        }
        self.fire(Guard::Recital, "the task, the files saved and the turn close the request");
        Some(self.recital())
    }

    /// Whether this request ends with the recital: from the first saved file (progress worth
    /// saying) or once the task is far back in the conversation, and from then on.
    fn recital_due(&mut self) -> bool {
        if !self.guard_state.recital_started {
            let past_opening = super::super::compaction::estimate(self.context().get(1..).unwrap_or_default());
            self.guard_state.recital_started =
                past_opening >= RECITAL_AFTER_TOKENS || !self.runner.deliverable_files().is_empty();
        }
        self.guard_state.recital_started
    }

    /// The task, what is saved so far and the turn.
    fn recital(&self) -> String {
        let what = match (self.record.mode, &self.record.instruction, &self.record.goal) {
            (Mode::Task, Some(task), _) => format!("Your task: {task}"),
            (_, _, Some(goal)) => format!("Your goal: {goal}"),
            _ => "Your goal: understand what this is and how it works.".to_string(),
        };
        let files: Vec<String> = self.runner.deliverable_files().into_iter().map(|f| f.filename).collect();
        // A download keeps the name its server gave it: the names are data.
        let saved = if files.is_empty() {
            " none yet.".to_string()
        } else {
            format!("\n{}", self.boundary.wrap(&files.join(", ")))
        };
        format!(
            "(Reminder) {what}\nFiles saved so far:{saved}\nTurn {} of {}. When the task is done, call {}.",
            self.turn,
            self.record.max_turns,
            self.finish_tool().name()
        )
    }
}

//! `streak_hold` (both profiles, before a call, as a step): one tool called past eight times
//! in a row, whatever its arguments, is held (a small model saving the same page under ever
//! new names) — but run_command, whose new commands are a shell session's work.
//!
//! Invariant: the held call is answered like any other.

use super::super::Agent;
use super::super::loops::STREAK_HOLD;
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::StreakHold,
    modes: Modes::ALL,
    evidence: "not ablated: the loop rows serve every model and run in both profiles \
               (docs/eval-history.md, below the guard table)",
};

/// Whether a call of `name` after `streak` calls in a row of `tool` is held.
fn holds(tool: &str, streak: usize, name: &str) -> bool {
    tool == name && streak >= STREAK_HOLD && name != Tool::RunCommand.name()
}

impl Agent {
    /// Before a call: held when its tool was called past `STREAK_HOLD` times in a row.
    pub(in crate::agent) fn streak_hold(&mut self, call: &mut Call) -> Verdict {
        let (tool, n) = self.loops.streak();
        if !holds(tool, n, &call.name) {
            return Verdict::Go;
        }
        let what = format!("{} ({n} calls in a row)", call.name);
        self.fire(Guard::StreakHold, &format!("{what} not run again"));
        Verdict::Held(self.held_back(&what, "so many calls of one tool bring nothing new"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_streak_hold_fires_past_eight_saves_and_is_quiet_on_a_shell_s_commands() {
        assert!(holds("save_file", STREAK_HOLD, "save_file"), "the ninth save in a row");
        assert!(!holds("save_file", STREAK_HOLD - 1, "save_file"), "the eighth runs");
        assert!(!holds("save_file", STREAK_HOLD, "finish_task"), "another tool breaks the streak");
        assert!(!holds("run_command", 20, "run_command"), "a shell's commands are its work");
    }
}

//! `loop_note` (both profiles, after a result): a call that repeats the one before, or a cycle
//! of two or three, with the same results, is said so (an answer seen before is not shown
//! again); a second repeat gets the page as it is now; one tool called five times in a row (not
//! run_command: a shell's commands are new work) is told to check it brings something new. The
//! loop detector (`loops.rs`) has remembered the result before this unit runs.
//!
//! Invariant: the notes follow the result; only an exact repeat's identical answer is replaced.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit};
use crate::agent::loops::STREAK_NOTE;
use crate::llm::Block;
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::LoopNote,
    modes: Modes::ALL,
    evidence: "not ablated: the loop rows serve every model and run in both profiles \
               (docs/eval-history.md, below the guard table)",
};

impl Agent {
    /// After a result: the streak's note, then the repeat's.
    pub(in crate::agent) fn loop_note(&mut self, call: &Call, outcome: &mut ToolOutcome) {
        let name = call.name.as_str();
        // A shell's commands are new work each time (a repeated one is caught below).
        if self.loops.streak().1 == STREAK_NOTE && name != Tool::RunCommand.name() {
            self.fire(Guard::LoopNote, &format!("{name} called {STREAK_NOTE} times in a row"));
            outcome.content.push(Block::text(format!(
                "You have called {name} {STREAK_NOTE} times in a row. Check that each call brings something new; \
                 if the task is done, finish. {}",
                self.task_line()
            )));
        }
        self.note_repeat(outcome);
    }

    /// A call that repeats the one before or a short cycle: say so (an answer seen before is
    /// not shown again); a second repeat gets the page as it is now.
    fn note_repeat(&mut self, outcome: &mut ToolOutcome) {
        let Some((p, n)) = self.loops.repeated() else { return };
        self.fire(Guard::LoopNote, &format!("{} repeated {n} time(s)", self.loops.describe(p)));
        match (p, n) {
            (1, 1) if outcome.is_error => outcome.content.push(Block::text(
                "This exact call already failed the same way. Repeating it will not help: look at the page or \
                 output first and try something different.",
            )),
            // An acting call again with another answer (the file it fetched before): kept.
            (1, 1) if !self.loops.same_answer() => outcome.content.push(Block::text(format!(
                "You made this exact call just before: repeating it brings nothing new. If the task is done, \
                 finish. {}",
                self.task_line()
            ))),
            // The same result again is not shown again: it would only fill a small context.
            (1, 1) => {
                outcome.content = vec![Block::text(format!(
                    "This exact call gave the same result as the one before (not shown again): repeating it \
                     brings nothing new. If what you need is in it, use it now. {}",
                    self.task_line()
                ))]
            }
            (p, 1) => outcome.content.push(Block::text(format!(
                "Your last {} calls repeat {} with the same results.",
                2 * p,
                self.loops.describe(p)
            ))),
            (p, _) => self.second_repeat(p, outcome),
        }
    }

    /// The second repeat: say so plainly, with the page as it is now.
    fn second_repeat(&mut self, p: usize, outcome: &mut ToolOutcome) {
        let what = self.loops.describe(p);
        let mut note = format!(
            "You have now made {what} three times, with the same results each time: it is not working. If the \
             answer is already in what you have, finish now with it. Otherwise do something different: another \
             element, another page, another tool. The same again will not be run. {}",
            self.task_line()
        );
        if let Some(page) = self.current_snapshot() {
            note.push_str(&format!("\n\nThe page as it is now:\n{page}"));
        }
        outcome.content.push(Block::text(note));
    }
}

//! `premature_finish` (small profile, before a call, as made): a finish before the file the
//! task's words name is saved (the answer known, `answer.txt` never written) is not run, once,
//! and the model is told the call that saves it, with the file named (the tool read from those
//! words too: `task_words.rs`). The held finish is no step.
//!
//! Invariant: at most once a session; a task that keeps no file, or whose file is saved, is
//! finished at once.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::PrematureFinish,
    modes: Modes::ALL,
    evidence: "own 14, three repeats: 2 → 2; this agent: OpenAI 1 → 1, Anthropic 1 → 1, JSON 5 → 2 (page-pdf, \
               log-errors, csv-sum). MiniWoB: never fired. With answer_in_words off too: find-file, Anthropic: \
               1 → 0 (each alone 1 → 1). Stays.",
};

/// `tool`'s call in words, with the file the task names (`save_file with filename
/// "answer.txt" and the content`): a small model fills in what it is told by name.
fn call_in_words(tool: Tool, file: Option<String>) -> String {
    let args = match (tool, file) {
        (Tool::SaveFile, Some(f)) => format!(" with filename \"{f}\" and the content the task asks for"),
        (Tool::BrowserScrapeTable, Some(f)) => format!(" with the table's selector and filename \"{f}\""),
        (Tool::BrowserSaveAsPdf, Some(f)) => format!(" with filename \"{f}\""),
        _ => " with what the task asks for".to_string(),
    };
    format!("{}{args}", tool.name())
}

impl Agent {
    /// Before a call: a finish before anything the task asks to keep was saved, held once.
    pub(in crate::agent) fn premature_finish(&mut self, call: &mut Call) -> Verdict {
        if call.name != Tool::FinishTask.name() || self.guard_state.finish_held || self.delivered() {
            return Verdict::Go;
        }
        let Some(needed) = self.task_deliverable().filter(|t| *t != Tool::WriteFile) else { return Verdict::Go };
        self.guard_state.finish_held = true;
        self.fire(Guard::PrematureFinish, "finish_task not run: nothing the task asks for is saved");
        Verdict::Held(ToolOutcome::error(format!(
            "Not finished: the task asks you to keep something, and no file is saved yet. Call {} first, then \
             finish_task.",
            call_in_words(needed, self.named_file())
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_premature_finish_names_the_file_and_is_quiet_on_a_tool_without_one() {
        assert_eq!(
            call_in_words(Tool::SaveFile, Some("answer.txt".into())),
            "save_file with filename \"answer.txt\" and the content the task asks for"
        );
        assert_eq!(
            call_in_words(Tool::BrowserDownload, Some("a.pdf".into())),
            "browser_download with what the task asks for"
        );
    }
}

//! What each turn offers and says: the last chance (a stuck session's, chosen by the
//! `stuck_deliver` unit, or a spent budget's), the tools listed and unlisted (the
//! `short_catalog` unit decides which are hidden), and the session opening its browser target
//! before the first turn (both profiles).
//!
//! Invariants: a focus note is a real user message (journaled like any other). The tool list is
//! the same every turn but the last chance, so a local server keeps its prompt cache; a focused
//! turn requires a call and refuses those outside its set. Nothing here reads the task's words
//! to choose a tool or a file (`guards/task_words.rs` does, for small-only guards).
//!
//! **Rationale:** the last chance lists every tool of the session that delivers, the finish
//! among them, and requires a call without naming one: what the task asks to keep is the
//! model's to read, and no server is told one tool where several are meant.

use super::Agent;
use crate::llm::{Block, Message, Role, ToolDef};
use crate::protocol::guards::Guard;
use crate::protocol::takeover::BudgetKind;
use crate::protocol::tools::Tool;
use crate::protocol::{Mode, SessionRecord, SessionType};
use serde_json::json;
use std::collections::HashSet;

/// What one turn offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Focus {
    /// Every tool of the session.
    #[default]
    Open,
    /// Delivering tools only: stuck, or the budget spent.
    Deliver,
}

#[derive(Default)]
pub(super) struct FocusState {
    /// The session opened its browser target before the first turn.
    pub opened: bool,
    /// The pages seen so far (without ref numbers).
    seen: HashSet<u64>,
    /// Whether the page returned by the call now running was new (set by `saw_page`).
    page_was_new: Option<bool>,
    /// The constrained call after the session got stuck was made.
    pub delivery_tried: bool,
    /// The focus of the turn being made, and the guard that chose it (none: the budget's wrap-up).
    pub turn: Focus,
    pub by: Option<Guard>,
}

/// Tools that produce what a task asks for, or end the session: all a `Deliver` turn offers.
pub(super) fn delivers(tool: Tool) -> bool {
    use Tool::*;
    matches!(
        tool,
        SaveFile
            | SaveNote
            | BrowserDownload
            | BrowserDownloadBatch
            | BrowserSaveAsPdf
            | BrowserScrapeTable
            | WriteFile
            | FinishTask
            | FinishExploration
    )
}

/// Whether a session opens its target itself: a browser session on an http(s) URL that is
/// neither a replay (its steps do) nor a dry run (where a navigation does nothing).
pub(super) fn opens_target(record: &SessionRecord) -> bool {
    let url = record.target.to_ascii_lowercase();
    record.session_type == SessionType::Browser
        && (url.starts_with("http://") || url.starts_with("https://"))
        && record.replay.is_none()
        && !record.options.dry_run
}

impl FocusState {
    pub(super) fn new(opened: bool) -> FocusState {
        FocusState { opened, ..FocusState::default() }
    }

    /// A page came back from the call now running; remembered.
    pub(super) fn saw_page(&mut self, page: &str) {
        self.page_was_new = Some(self.seen.insert(super::snapshot::hash_of(page)));
    }

    /// Before a call runs.
    pub(super) fn before_call(&mut self) {
        self.page_was_new = None;
    }

    /// After a call ran: whether it brought a page not seen before.
    pub(super) fn after_call(&mut self) -> bool {
        self.page_was_new.take() == Some(true)
    }
}

impl Agent {
    /// Open the browser target before the first turn; the opening message gets the page.
    pub(super) fn open_target(&mut self) {
        if !self.focus.opened {
            return;
        }
        let input = json!({"url": self.record.target});
        let outcome = self.run_tool(Tool::BrowserNavigate.name(), &input);
        if outcome.stopped {
            return;
        }
        let label = if outcome.is_error {
            format!("Opening {} failed:", self.record.target)
        } else {
            "The page is open already:".to_string()
        };
        let opening = &mut self.messages[0].content;
        opening.push(Block::text(label));
        opening.extend(outcome.content);
    }

    /// The focus of the turn about to be made; a note saying why goes into the conversation.
    pub(super) fn choose_focus(&mut self, stuck: Option<&str>, budget: Option<BudgetKind>) {
        let focus = if stuck.is_some() || budget.is_some() { Focus::Deliver } else { Focus::Open };
        self.focus.by = self.focused_by(stuck.is_some(), budget);
        self.focus.turn = focus;
        if focus == Focus::Open {
            return;
        }
        let task = self.task_line();
        let (offers, finish) = (in_words(&self.turn_listed()), self.finish_tool().name());
        let note = match budget {
            Some(budget) => format!(
                "The session's {} budget is spent: this is your last reply. {task}\n\
                 Deliver what you have now, in this reply: it offers {offers}. End with {finish} and the answer \
                 or what was done.",
                budget.noun()
            ),
            None => format!(
                "You are repeating calls that bring nothing new, and you have read what the pages show. {task}\n\
                 Deliver now: this turn offers {offers}. End with {finish} and the answer or what was done."
            ),
        };
        self.push_user_text(note);
    }

    /// A text for the model: added to our last message when it is ours (turns must alternate).
    pub(super) fn push_user_text(&mut self, text: String) {
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(Block::text(text)),
            _ => self.messages.push(Message::user(vec![Block::text(text)])),
        }
        self.journal_conversation();
    }

    /// Whether this turn offers `tool`: an open turn every tool, the last chance those that
    /// deliver (whatever the task's words: what it asks to keep is the model's to read).
    fn in_turn(&self, tool: Tool) -> bool {
        self.focus.turn == Focus::Open || delivers(tool)
    }

    /// The tools this turn shows the model, in the table's order.
    fn turn_listed(&self) -> Vec<Tool> {
        self.offered.iter().copied().filter(|t| self.in_turn(*t) && !self.hidden.contains(t)).collect()
    }

    /// The tools the model is shown this turn, and the others it may call by name. The list is
    /// the same every turn but the last chance, so a local server keeps its prompt cache; a
    /// focused turn requires a tool call and refuses the calls outside its set (`refused`).
    pub(super) fn turn_tools(&self) -> (Vec<ToolDef>, Vec<ToolDef>) {
        let in_turn = self.offered.iter().zip(&self.tools).filter(|(t, _)| self.in_turn(**t));
        let (listed, unlisted): (Vec<_>, Vec<_>) = in_turn.partition(|(t, _)| !self.hidden.contains(t));
        let defs = |v: Vec<(&Tool, &ToolDef)>| v.into_iter().map(|(_, d)| d.clone()).collect();
        (defs(listed), defs(unlisted))
    }

    /// Whether this turn requires a tool call: a focused one does. No tool is named: the last
    /// chance means every tool it lists, and where it lists one, a required call is that tool on
    /// every server (llama.cpp honours "a call is required" but not "this tool").
    pub(super) fn required_call(&self) -> bool {
        self.focus.turn != Focus::Open
    }

    /// The tool that ends this session.
    pub(super) fn finish_tool(&self) -> Tool {
        match self.record.mode {
            Mode::Task => Tool::FinishTask,
            Mode::Explore => Tool::FinishExploration,
        }
    }

    /// A call this turn's focus does not offer: not run, and the model is told what is.
    pub(super) fn refused(&mut self, name: &str) -> Option<super::outcome::ToolOutcome> {
        let tool = Tool::from_name(name)?;
        if self.in_turn(tool) {
            return None;
        }
        self.refused_by_focus(name);
        Some(super::outcome::ToolOutcome::error(format!(
            "Not run: this turn offers only {}. End with {} and the answer or what was done.",
            in_words(&self.turn_listed()),
            self.finish_tool().name()
        )))
    }

    /// The names of the tools the model is shown (for the conversation files).
    pub(super) fn listed_names(&self) -> Vec<&'static str> {
        self.offered.iter().filter(|t| !self.hidden.contains(t)).map(|t| t.name()).collect()
    }
}

/// Tool names as a sentence says them: `save_file, browser_download and finish_task`.
fn in_words(tools: &[Tool]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    match names.split_last() {
        None => "nothing".to_string(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One call: the page it brought back (if any); whether that page was new.
    fn call(f: &mut FocusState, page: Option<&str>) -> bool {
        f.before_call();
        if let Some(p) = page {
            f.saw_page(p);
        }
        f.after_call()
    }

    #[test]
    fn tool_names_are_said_as_a_sentence() {
        assert_eq!(in_words(&[Tool::FinishTask]), "finish_task");
        let three = [Tool::WriteFile, Tool::SaveFile, Tool::FinishTask];
        assert_eq!(in_words(&three), "write_file, save_file and finish_task");
    }

    #[test]
    fn a_page_is_new_once_whatever_its_ref_numbers() {
        let mut f = FocusState::new(true);
        assert!(call(&mut f, Some("[e1] link \"A\"")), "a new page");
        assert!(!call(&mut f, Some("[e1] link \"A\"")));
        assert!(!call(&mut f, Some("[e9] link \"A\"")), "the same page with other ref numbers");
        assert!(!call(&mut f, None), "a result without a page");
        assert!(call(&mut f, Some("[e2] link \"B\"")), "a page not seen before");
    }
}

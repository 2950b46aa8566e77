//! What each turn offers and says (the `short_catalog`, `recital`, `stuck_deliver` and
//! `login_hint` guards), and the session opening its browser target before the first turn
//! (both profiles).
//!
//! Invariants: a focus note is a real user message (journaled like any other); only the recital
//! lives in the view alone. The tool list is the same every turn but the last chance, so a local
//! server keeps its prompt cache; a focused turn requires a call and refuses those outside its set.
//! Nothing here reads the task's words to choose a tool or a file (`task_words.rs` does, for
//! small-only guards).
//!
//! **Rationale:** the last chance lists every tool of the session that delivers, the finish
//! among them, and requires a call without naming one: what the task asks to keep is the
//! model's to read, and no server is told one tool where several are meant.

use super::Agent;
use crate::config::Vision;
use crate::llm::{Block, Message, Role, ToolDef};
use crate::protocol::guards::Guard;
use crate::protocol::takeover::BudgetKind;
use crate::protocol::tools::Tool;
use crate::protocol::{Mode, SessionRecord, SessionType};
use serde_json::json;
use std::collections::HashSet;

/// The conversation past the opening (which holds the task) at which the recital starts: a few
/// pages' worth. A short page is done before then, and a reminder there only costs.
const RECITAL_AFTER_TOKENS: u64 = 1_000;

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
    /// The recital started (`recital_due`); it stays on, compaction or not.
    recital_started: bool,
    /// Sign-in forms pointed out so far (`login_hint`).
    login_hints: u32,
    /// A finish before the deliverable existed was answered once (`premature_finish`).
    pub finish_held: bool,
    /// The constrained call after the session got stuck was made.
    pub delivery_tried: bool,
    /// The focus of the turn being made, and the guard that chose it (none: the budget's wrap-up).
    pub turn: Focus,
    by: Option<Guard>,
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

/// Whether the model is shown `tool` (else it runs only when called by name): the table's short
/// catalog, the screenshot for a model known to see, and what asks a person only where one
/// answers (not under `auto_confirm`) and notifications only where the session has a target.
pub(super) fn lists(tool: Tool, record: &SessionRecord, vision: Vision) -> bool {
    match tool {
        Tool::BrowserScreenshot => vision == Vision::On,
        Tool::RequestConfirmation | Tool::AskUser | Tool::RequestTakeover => !record.options.auto_confirm,
        Tool::SendNotification => record.notifications.telegram || record.notifications.webhook,
        // A task's deliverable is its files and its answer; notes serve explorations.
        Tool::SaveNote => record.mode == Mode::Explore,
        // Uploads serve a task that came with files (it still runs when called by name).
        Tool::BrowserUploadFile => !record.inputs.is_empty(),
        _ => !tool.spec().unlisted,
    }
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
    /// `json_actions`: the model answers in JSON actions, where the recital closes every request
    /// from the first (there it earned on short pages too; with native tool calls it cost).
    pub(super) fn new(opened: bool, json_actions: bool) -> FocusState {
        FocusState { opened, recital_started: json_actions, ..FocusState::default() }
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

    /// A page with a password field, in a session with stored credentials: say that
    /// perform_login is the way in (small models submit the empty form instead). Twice at most.
    pub(super) fn login_hint(&mut self, sign_in: bool) -> Option<String> {
        if !self.record.has_credentials || !sign_in || self.focus.login_hints >= 2 || !self.guard_on(Guard::LoginHint) {
            return None;
        }
        self.focus.login_hints += 1;
        self.fire(Guard::LoginHint, "a sign-in form: perform_login named");
        Some(
            "A sign-in form is on this page: call perform_login, which fills and submits it with the stored credentials."
                .to_string(),
        )
    }

    /// Whether this request ends with the recital: from the first saved file (progress worth
    /// saying) or once the task is far back in the conversation, and from then on (in JSON mode
    /// always, `FocusState::new`).
    pub(super) fn recital_due(&mut self) -> bool {
        if !self.focus.recital_started {
            let past_opening = super::compaction::estimate(self.context().get(1..).unwrap_or_default());
            self.focus.recital_started =
                past_opening >= RECITAL_AFTER_TOKENS || !self.runner.deliverable_files().is_empty();
        }
        self.focus.recital_started
    }

    /// The task, what is saved so far and the turn: said again at the end of each request
    /// once `recital_due`.
    pub(super) fn recital(&self) -> String {
        let what = match (self.record.mode, &self.record.instruction, &self.record.goal) {
            (Mode::Task, Some(task), _) => format!("Your task: {task}"),
            (_, _, Some(goal)) => format!("Your goal: {goal}"),
            _ => "Your goal: understand what this is and how it works.".to_string(),
        };
        let files: Vec<String> = self.runner.deliverable_files().into_iter().map(|f| f.filename).collect();
        let saved = if files.is_empty() { "none yet".to_string() } else { files.join(", ") };
        format!(
            "(Reminder) {what}\nFiles saved so far: {saved}.\nTurn {} of {}. When the task is done, call {}.",
            self.turn,
            self.record.max_turns,
            self.finish_tool().name()
        )
    }

    /// The focus of the turn about to be made; a note saying why goes into the conversation.
    pub(super) fn choose_focus(&mut self, stuck: Option<&str>, budget: Option<BudgetKind>) {
        let focus = if stuck.is_some() || budget.is_some() { Focus::Deliver } else { Focus::Open };
        // The budget's wrap-up is no guard: every session ends so.
        let by = (stuck.is_some() && budget.is_none()).then_some(Guard::StuckDeliver);
        if let Some(guard) = by {
            self.fire(guard, "stuck: one call that can only deliver");
        }
        self.focus.by = by;
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
    fn finish_tool(&self) -> Tool {
        match self.record.mode {
            Mode::Task => Tool::FinishTask,
            Mode::Explore => Tool::FinishExploration,
        }
    }

    /// A call this turn's focus does not offer: not run, and the model is told what is.
    pub(super) fn refused(&self, name: &str) -> Option<super::outcome::ToolOutcome> {
        let tool = Tool::from_name(name)?;
        if self.in_turn(tool) {
            return None;
        }
        if let Some(guard) = self.focus.by {
            self.fire(guard, &format!("{name} not run: this turn asks to deliver"));
        }
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
        let mut f = FocusState::new(true, false);
        assert!(call(&mut f, Some("[e1] link \"A\"")), "a new page");
        assert!(!call(&mut f, Some("[e1] link \"A\"")));
        assert!(!call(&mut f, Some("[e9] link \"A\"")), "the same page with other ref numbers");
        assert!(!call(&mut f, None), "a result without a page");
        assert!(call(&mut f, Some("[e2] link \"B\"")), "a page not seen before");
    }
}

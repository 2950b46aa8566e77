//! What each turn offers and says (the `short_catalog`, `recital`, `stuck_deliver`,
//! `premature_finish` and `login_hint` guards), and the session opening its browser target
//! before the first turn (both profiles).
//!
//! Invariants: a focus note is a real user message (journaled like any other); only the recital
//! lives in the view alone. The tool list is the same every turn but the last chance, so a local
//! server keeps its prompt cache; a focused turn requires a call and refuses those outside its set.
//!
//! **Rationale:** the last chance lists only the tool that delivers because llama.cpp honours "a
//! call is required" but not "this tool".

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
    finish_held: bool,
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
        let finish = match self.record.mode {
            Mode::Task => "finish_task",
            Mode::Explore => "finish_exploration",
        };
        format!(
            "(Reminder) {what}\nFiles saved so far: {saved}.\nTurn {} of {}. When the task is done, call {finish}.",
            self.turn, self.record.max_turns
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
        let task = self.task_line();
        let note = match (focus, budget) {
            (Focus::Open, _) => return,
            (Focus::Deliver, Some(budget)) => format!(
                "The session's {} budget is spent: this is your last call. {task}\nDeliver what you have now: call {}.",
                budget.noun(),
                self.deliver_call()
            ),
            (Focus::Deliver, None) => format!(
                "You are repeating calls that bring nothing new, and you have read what the pages show. {task}\n\
                 Deliver now: call {}.",
                self.deliver_call()
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

    /// The tools the model is shown, and the session's others (which still run when called). The
    /// list is the same every turn but the last chance, so a local server keeps its prompt cache;
    /// a focused turn requires a tool call and refuses the calls outside its set (`refused`).
    pub(super) fn turn_tools(&self) -> (Vec<ToolDef>, Vec<ToolDef>) {
        // The last chance lists the one tool that delivers: servers that honour no named tool
        // choice (llama.cpp) still must call it, since a call is required.
        let deliver = (self.focus.turn == Focus::Deliver).then(|| self.deliverable());
        let listed_now = |t: &Tool| deliver.map_or(!self.hidden.contains(t), |d| *t == d);
        let (listed, unlisted): (Vec<_>, Vec<_>) =
            self.offered.iter().zip(&self.tools).partition(|(t, _)| listed_now(t));
        let defs = |v: Vec<(&Tool, &ToolDef)>| v.into_iter().map(|(_, d)| d.clone()).collect();
        // On the last chance nothing else is accepted either (JSON mode then corrects the reply).
        let unlisted = if deliver.is_some() { Vec::new() } else { defs(unlisted) };
        (defs(listed), unlisted)
    }

    /// Whether this turn requires a tool call: a focused one does (on the last chance the one
    /// tool listed, the one that delivers what the task asks for).
    pub(super) fn required_call(&self) -> bool {
        self.focus.turn != Focus::Open
    }

    /// The tool that delivers what the task asks for, from its words: with files saved (or in
    /// an exploration) the finish; else a file written on the host, a page printed, a download,
    /// text saved; else the finish.
    pub(super) fn deliverable(&self) -> Tool {
        let finish = if self.record.mode == Mode::Explore { Tool::FinishExploration } else { Tool::FinishTask };
        if self.record.mode == Mode::Explore || self.delivered() {
            return finish;
        }
        self.task_deliverable().unwrap_or(finish)
    }

    /// The deliverable's call in words, with the file the task names (`save_file with filename
    /// "answer.txt" and the content`): a small model fills in what it is told by name.
    pub(super) fn deliver_call(&self) -> String {
        let tool = self.deliverable();
        let args = match (tool, self.named_file()) {
            (Tool::SaveFile, Some(f)) => format!(" with filename \"{f}\" and the content the task asks for"),
            (Tool::BrowserScrapeTable, Some(f)) => format!(" with the table's selector and filename \"{f}\""),
            (Tool::BrowserSaveAsPdf, Some(f)) => format!(" with filename \"{f}\""),
            (Tool::FinishTask | Tool::FinishExploration, _) => " with the answer or what was done".to_string(),
            _ => " with what the task asks for".to_string(),
        };
        format!("{}{args}", tool.name())
    }

    /// Whether what the task asks to keep is saved: the file it names (a side download, a
    /// guide clicked on the way, is not `answer.txt`), else any file.
    pub(super) fn delivered(&self) -> bool {
        let files = self.runner.deliverable_files();
        match self.named_file().filter(|f| !f.to_lowercase().ends_with(".pdf")) {
            Some(named) => files.iter().any(|f| f.filename.eq_ignore_ascii_case(&named)),
            None => !files.is_empty(),
        }
    }

    /// The file the task asks to keep (`answer.txt`, `staff.csv`), as written.
    pub(super) fn named_file(&self) -> Option<String> {
        file_to_keep(self.record.instruction.as_deref().unwrap_or(""))
    }

    /// The tool the task's words point at for what it asks to keep, if any.
    pub(super) fn task_deliverable(&self) -> Option<Tool> {
        let task = self.record.instruction.as_deref().unwrap_or("").to_lowercase();
        let names_file = self.named_file().is_some_and(|f| !f.to_lowercase().ends_with(".pdf"));
        let shell = self.record.session_type == SessionType::Shell;
        let candidates = [
            (shell && (task.contains("create") || task.contains("write")), Tool::WriteFile),
            (task.contains("pdf") && !task.contains("download"), Tool::BrowserSaveAsPdf),
            (task.contains("download"), Tool::BrowserDownload),
            (names_file && task.contains("table"), Tool::BrowserScrapeTable),
            (names_file || task.contains("save"), Tool::SaveFile),
        ];
        let listed = |t: Tool| self.offered.contains(&t) && !self.hidden.contains(&t);
        candidates.into_iter().find(|(yes, t)| *yes && listed(*t)).map(|(_, t)| t)
    }

    /// A finish before anything the task asks to keep was saved (the answer known, `answer.txt`
    /// never written): not run, once; the model is told what to call first.
    pub(super) fn premature_finish(&mut self, name: &str) -> Option<super::outcome::ToolOutcome> {
        if name != Tool::FinishTask.name()
            || self.focus.finish_held
            || self.delivered()
            || !self.guard_on(Guard::PrematureFinish)
        {
            return None;
        }
        let needed = self.task_deliverable().filter(|t| *t != Tool::WriteFile)?;
        self.focus.finish_held = true;
        self.fire(Guard::PrematureFinish, "finish_task not run: nothing the task asks for is saved");
        let call = if needed == self.deliverable() { self.deliver_call() } else { needed.name().to_string() };
        Some(super::outcome::ToolOutcome::error(format!(
            "Not finished: the task asks you to keep something, and no file is saved yet. Call {call} first, then \
             finish_task."
        )))
    }

    /// A call this turn's focus does not offer: not run, and the model is told what is.
    pub(super) fn refused(&self, name: &str) -> Option<super::outcome::ToolOutcome> {
        let tool = Tool::from_name(name)?;
        let offered = match self.focus.turn {
            Focus::Open => return None,
            Focus::Deliver => delivers(tool),
        };
        if offered {
            return None;
        }
        if let Some(guard) = self.focus.by {
            self.fire(guard, &format!("{name} not run: this turn asks to deliver"));
        }
        Some(super::outcome::ToolOutcome::error(
            "Not run. Deliver now: save_file, browser_download, browser_save_as_pdf, or finish_task with the answer.",
        ))
    }

    /// The names of the tools the model is shown (for the conversation files).
    pub(super) fn listed_names(&self) -> Vec<&'static str> {
        self.offered.iter().filter(|t| !self.hidden.contains(t)).map(|t| t.name()).collect()
    }
}

/// The file a task asks to keep: its last bare file name. A path (`/srv/app/sales.csv`) is a
/// file to read, and a task names what it reads before where it saves ("a file named
/// notes.txt … save its contents as found.txt").
fn file_to_keep(task: &str) -> Option<String> {
    bare_file_names(task).pop().map(str::to_string)
}

/// The bare file names of a task, in order (`notes-2031.txt`, then `found.txt`).
fn bare_file_names(task: &str) -> Vec<&str> {
    task.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '-' && c != '_'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.contains('/'))
        .filter(|w| [".txt", ".csv", ".json", ".md", ".pdf"].iter().any(|e| w.to_lowercase().ends_with(e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_file_to_keep_is_the_last_bare_file_name() {
        assert_eq!(file_to_keep("Save just the price in answer.txt.").as_deref(), Some("answer.txt"));
        let find = "Somewhere under /tmp/x is a file named notes-2031.txt. Save its contents as found.txt.";
        assert_eq!(file_to_keep(find).as_deref(), Some("found.txt"));
        let sum = "/srv/data/sales.csv has an amount column. Save the sum in answer.txt.";
        assert_eq!(file_to_keep(sum).as_deref(), Some("answer.txt"));
        assert_eq!(file_to_keep("Count the lines of /var/log/app.txt"), None);
    }

    /// One call: the page it brought back (if any); whether that page was new.
    fn call(f: &mut FocusState, page: Option<&str>) -> bool {
        f.before_call();
        if let Some(p) = page {
            f.saw_page(p);
        }
        f.after_call()
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

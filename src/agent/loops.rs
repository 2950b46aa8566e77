//! Loops that escalate (both profiles): every call is remembered as its name, arguments and a
//! hash of its result (ref numbers left out); a loop is the newest calls repeating with period
//! 1, 2 or 3, results included, so a repeat that brings something new is no loop. The first
//! repeat is noted, the second gets the page as it is now, a third is not run, and a second
//! call held back soon after marks the session stuck (`loop_note`, `loop_hold`). One tool (not
//! run_command: a shell's commands are new work) is noted after five calls in a row. One tool
//! called past eight times in a row (not run_command) and a call whose last two failures
//! answered the same are held too (`streak_hold`, `failed_hold`); a URL downloaded before or a
//! page printed before as it is now is answered with its file (`done_before`).
//!
//! Invariant: a held-back call is answered like any other call, so the conversation stays
//! complete.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Block;
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

/// Calls remembered.
const WINDOW: usize = 24;
/// The longest cycle looked for.
const MAX_PERIOD: usize = 3;
/// A second held-back call within this many calls of the first means the session is stuck.
const PERSIST_WITHIN: u64 = 6;
/// Characters of a call shown in a note.
const SHOWN: usize = 120;
/// One tool called this often in a row, whatever its arguments, gets a note; past `STREAK_HOLD`
/// it is held back (a small model saving the same page under ever new names, say), but for
/// run_command, whose new commands are a shell session's work.
const STREAK_NOTE: usize = 5;
const STREAK_HOLD: usize = 8;
/// A call that failed this often the same way (other calls between or not) is not run again.
const FAILED_HOLD: u32 = 2;

#[derive(Clone, PartialEq)]
struct Entry {
    call: String,
    result: u64,
}

#[derive(Default)]
pub(super) struct LoopGuard {
    history: VecDeque<Entry>,
    /// The step of the last call held back.
    last_held: Option<u64>,
    /// Why the session cannot go on, once it is stuck.
    stuck: Option<String>,
    /// The same, kept after the model was given its last chance (`unstick`).
    was_stuck: Option<String>,
    /// The tool of the newest calls and how many times in a row it was called (any arguments).
    streak: (String, usize),
    /// URLs downloaded so far, and the file each was stored as.
    downloaded: std::collections::HashMap<String, String>,
    /// Pages printed to PDF so far (by their text without ref numbers), and the file of each.
    printed: std::collections::HashMap<u64, String>,
    /// Calls that failed: the newest failure's answer (`result_hash`) and how many failures in
    /// a row of that call answered it (other calls may come between: small models retry).
    failed: std::collections::HashMap<String, (u64, u32)>,
    /// What the newest call answered, as `result_hash` (an acting call's entry holds 0).
    last_answer: u64,
}

impl LoopGuard {
    /// How many of the newest calls repeat with period `p` (at least `p` when there are that many).
    fn periodic_suffix(&self, p: usize) -> usize {
        let (h, n) = (&self.history, self.history.len());
        if n < p {
            return 0;
        }
        let mut len = p;
        while len < n && h[n - 1 - len] == h[n - 1 - len + p] {
            len += 1;
        }
        len
    }

    /// The period of a loop that has repeated twice and that `call` is part of.
    fn would_repeat(&self, call: &str) -> Option<usize> {
        let n = self.history.len();
        (1..=MAX_PERIOD)
            .find(|&p| self.periodic_suffix(p) >= 3 * p && self.history.iter().skip(n - p).any(|e| e.call == call))
    }

    /// The loop the newest call completes: its period and how often it has repeated (the
    /// period repeated most; `N S S N S S` is a cycle of three, not a pair of snapshots).
    fn repeated(&self) -> Option<(usize, usize)> {
        (1..=MAX_PERIOD)
            .map(|p| (p, self.periodic_suffix(p)))
            .filter(|&(p, len)| len >= 2 * p)
            .map(|(p, len)| (p, len / p - 1))
            .max_by_key(|&(p, repeats)| (repeats, std::cmp::Reverse(p)))
    }

    fn push(&mut self, call: String, result: u64) {
        self.history.push_back(Entry { call, result });
        if self.history.len() > WINDOW {
            self.history.pop_front();
        }
    }

    /// The calls of the newest loop of period `p`, in order, for a note.
    fn describe(&self, p: usize) -> String {
        let n = self.history.len();
        let calls: Vec<String> =
            self.history.iter().skip(n - p).map(|e| super::context::excerpt(&e.call, SHOWN)).collect();
        match p {
            1 => format!("`{}`", calls[0]),
            _ => format!("the cycle {}", calls.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(" → ")),
        }
    }

    /// Why the session ended, once it is stuck.
    pub(super) fn stuck(&self) -> Option<&str> {
        self.stuck.as_deref()
    }

    /// Give the model one more chance (a constrained call) after it was found stuck.
    pub(super) fn unstick(&mut self) {
        self.was_stuck = self.stuck.take();
    }

    /// Why the session was found stuck before its last chance.
    pub(super) fn last_stuck(&self) -> Option<String> {
        self.was_stuck.clone()
    }
}

/// Calls whose exact repeat is a loop whatever they answer: the same download, PDF, file, form,
/// command or navigation again (each answer differs only by a new file name or a time). Clicks
/// and keys are judged by their results: a "Next" button clicked page after page is progress.
fn repeat_is_loop(name: &str) -> bool {
    use Tool::*;
    Tool::from_name(name).is_some_and(|t| {
        let input_only = matches!(
            t,
            BrowserClick | BrowserPressKey | BrowserBack | BrowserForward | Click | RightClick | DoubleClick
        );
        (t.spec().acts && !input_only) || matches!(t, BrowserSaveAsPdf | SaveFile)
    })
}

/// The file a download or print was stored as (its result's `filename`).
fn stored_as(outcome: &ToolOutcome) -> Option<String> {
    let text = super::context::first_text(&outcome.content);
    serde_json::from_str::<Value>(&text).ok()?["filename"].as_str().map(str::to_string)
}

/// A result's identity: its text and whether it failed (images left out). Ref numbers do not
/// count: the same page loaded again gets new ones, and is still the same page.
fn result_hash(outcome: &ToolOutcome) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    outcome.is_error.hash(&mut h);
    for b in &outcome.content {
        if let Block::Text { text } = b {
            super::snapshot::without_ref_numbers(text).hash(&mut h);
        }
    }
    h.finish()
}

impl Agent {
    /// Run one call unless it would repeat a loop a third time; note the loops it completes.
    pub(super) fn dispatch_watched(&mut self, name: &str, input: &Value) -> ToolOutcome {
        let call = format!("{name} {input}");
        if let Some(p) = self.loops.would_repeat(&call).filter(|_| self.guard_on(Guard::LoopHold)) {
            let what = self.loops.describe(p);
            return self.hold_back(Guard::LoopHold, &what, "it gave the same results three times");
        }
        // The same call failed the same way twice already (small models retry between other
        // calls too); one that failed two ways may meet a page that changed in between.
        let failed_alike = self.loops.failed.get(&call).is_some_and(|(_, n)| *n >= FAILED_HOLD);
        if failed_alike && self.guard_on(Guard::FailedHold) {
            let what = format!("`{}`", super::context::excerpt(&call, SHOWN));
            return self.hold_back(Guard::FailedHold, &what, "it failed the same way twice before");
        }
        let (tool, n) = &self.loops.streak;
        // A shell's work is one command after another: only its exact repeats are loops.
        if tool == name && *n >= STREAK_HOLD && name != Tool::RunCommand.name() && self.guard_on(Guard::StreakHold) {
            let what = format!("{name} ({n} calls in a row)");
            return self.hold_back(Guard::StreakHold, &what, "so many calls of one tool bring nothing new");
        }
        self.focus.before_call();
        // A URL fetched before is answered with its file, and still counts towards a loop (a
        // small model clicks the same file link again and again).
        let done = self.guard_on(Guard::DoneBefore).then(|| self.downloaded_before(name, input)).flatten();
        let done = done.or_else(|| self.guard_on(Guard::DoneBefore).then(|| self.printed_before(name)).flatten());
        let mut outcome = match done {
            Some(done) => {
                self.fire(Guard::DoneBefore, &format!("{name} answered with the file it made before"));
                done
            }
            None => self.dispatch(name, input),
        };
        if outcome.stopped {
            return outcome;
        }
        if self.focus.after_call() {
            // A page not seen before: what failed on the earlier ones may work here.
            self.loops.failed.clear();
        }
        self.loops.streak = match std::mem::take(&mut self.loops.streak) {
            (tool, n) if tool == name => (tool, n + 1),
            _ => (name.to_string(), 1),
        };
        self.note_download(name, input, &outcome);
        self.note_print(name, &outcome);
        let answer = result_hash(&outcome);
        if outcome.is_error {
            let (last, n) = self.loops.failed.entry(call.clone()).or_insert((answer, 0));
            *n = if *last == answer { *n + 1 } else { 1 };
            *last = answer;
        } else {
            self.loops.failed.remove(&call);
        }
        let same_answer = std::mem::replace(&mut self.loops.last_answer, answer) == answer;
        self.loops.push(call, if repeat_is_loop(name) { 0 } else { answer });
        // After the result is remembered: the note is not part of it.
        // A shell's commands are new work each time (a repeated one is caught below).
        let streak = self.loops.streak.1 == STREAK_NOTE && name != Tool::RunCommand.name();
        if streak && self.guard_on(Guard::LoopNote) {
            self.fire(Guard::LoopNote, &format!("{name} called {STREAK_NOTE} times in a row"));
            outcome.content.push(Block::text(format!(
                "You have called {name} {STREAK_NOTE} times in a row. Check that each call brings something new; \
                 if the task is done, finish. {}",
                self.task_line()
            )));
        }
        self.note_repeat(same_answer, &mut outcome);
        outcome
    }

    /// A call that repeats the one before or a short cycle: say so (an answer seen before is
    /// not shown again); a second repeat gets the page as it is now.
    fn note_repeat(&mut self, same_answer: bool, outcome: &mut ToolOutcome) {
        let repeated = self.loops.repeated().filter(|_| self.guard_on(Guard::LoopNote));
        if let Some((p, n)) = repeated {
            self.fire(Guard::LoopNote, &format!("{} repeated {n} time(s)", self.loops.describe(p)));
        }
        match repeated {
            Some((1, 1)) if outcome.is_error => outcome.content.push(Block::text(
                "This exact call already failed the same way. Repeating it will not help: look at the page or \
                 output first and try something different.",
            )),
            // An acting call again with another answer (the file it fetched before): kept.
            Some((1, 1)) if !same_answer => outcome.content.push(Block::text(format!(
                "You made this exact call just before: repeating it brings nothing new. If the task is done, \
                 finish. {}",
                self.task_line()
            ))),
            // The same result again is not shown again: it would only fill a small context.
            Some((1, 1)) => {
                outcome.content = vec![Block::text(format!(
                    "This exact call gave the same result as the one before (not shown again): repeating it \
                     brings nothing new. If what you need is in it, use it now. {}",
                    self.task_line()
                ))]
            }
            Some((p, 1)) => outcome.content.push(Block::text(format!(
                "Your last {} calls repeat {} with the same results.",
                2 * p,
                self.loops.describe(p)
            ))),
            Some((p, _)) => self.second_repeat(p, outcome),
            None => {}
        }
    }

    /// A download of a URL fetched before: answered with the file it is stored as.
    fn downloaded_before(&self, name: &str, input: &Value) -> Option<ToolOutcome> {
        if name != Tool::BrowserDownload.name() {
            return None;
        }
        let file = self.loops.downloaded.get(input["url"].as_str()?)?;
        Some(ToolOutcome::ok(serde_json::json!({
            "already_downloaded": file,
            "note": format!("This URL was downloaded before and is in the session's files as {file}; it is not \
                             fetched again. If the task is done, finish."),
        })))
    }

    /// A PDF of a page printed before, as it was then: answered with the file it is stored as
    /// (a small model prints the same page again and again under the name the last print got;
    /// each print differs from the last only by its timestamp).
    fn printed_before(&self, name: &str) -> Option<ToolOutcome> {
        if name != Tool::BrowserSaveAsPdf.name() {
            return None;
        }
        let file = self.loops.printed.get(&self.page_identity()?)?;
        Some(ToolOutcome::ok(serde_json::json!({
            "already_saved": file,
            "note": format!("This page, as it is now, was saved as a PDF before: it is in the session's files as \
                             {file} and is not saved again. If the task is done, finish."),
        })))
    }

    fn note_print(&mut self, name: &str, outcome: &ToolOutcome) {
        if name != Tool::BrowserSaveAsPdf.name() {
            // A page typed into or clicked on may have changed without a new snapshot.
            if Tool::from_name(name).is_some_and(|t| t.spec().acts) {
                self.loops.printed.clear();
            }
            return;
        }
        if outcome.is_error {
            return;
        }
        if let (Some(page), Some(file)) = (self.page_identity(), stored_as(outcome)) {
            self.loops.printed.insert(page, file);
        }
    }

    /// The latest page's identity.
    fn page_identity(&self) -> Option<u64> {
        self.last_page.as_deref().map(super::snapshot::hash_of)
    }

    fn note_download(&mut self, name: &str, input: &Value, outcome: &ToolOutcome) {
        if name != Tool::BrowserDownload.name() || outcome.is_error {
            return;
        }
        if let (Some(url), Some(file)) = (input["url"].as_str(), stored_as(outcome)) {
            self.loops.downloaded.insert(url.to_string(), file);
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

    /// The session's task (or goal) again: small models lose it in long contexts.
    pub(super) fn task_line(&self) -> String {
        match (&self.record.instruction, &self.record.goal) {
            (Some(task), _) => format!("Your task: {task}"),
            (None, Some(goal)) => format!("Your goal: {goal}"),
            (None, None) => String::new(),
        }
    }

    /// A call that would repeat a loop a third time: not run. A second one soon after: stuck.
    fn hold_back(&mut self, guard: Guard, what: &str, because: &str) -> ToolOutcome {
        let persisting = self.loops.last_held.is_some_and(|s| self.step.saturating_sub(s) <= PERSIST_WITHIN);
        self.loops.last_held = Some(self.step);
        if persisting {
            self.loops.stuck = Some(format!("stuck: the model kept repeating {what}"));
        }
        self.fire(guard, &format!("{what} not run again"));
        // A small model told only "do something different" repeats itself: name real choices.
        let unopened = self.grounding.unopened();
        let instead = if self.record.session_type == crate::protocol::SessionType::Shell {
            "Do something different: `find DIR -type f` lists every file below a folder, `grep -rl WORD DIR` \
             finds files by what they hold. Or finish and say what is missing."
                .to_string()
        } else if unopened.is_empty() {
            "Do something different, or finish and say what is missing.".to_string()
        } else {
            format!(
                "Do something different: pages not opened yet (browser_navigate to one): {}. Or finish and say what is missing.",
                unopened.join(", ")
            )
        };
        ToolOutcome::error(format!("Not run: this would repeat {what} once more, and {because}. {instead}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(calls: &[&str]) -> LoopGuard {
        let mut g = LoopGuard::default();
        for c in calls {
            g.push(c.to_string(), c.len() as u64);
        }
        g
    }

    #[test]
    fn repeats_and_cycles_are_found_with_their_results() {
        assert_eq!(guard(&["a", "b"]).repeated(), None);
        assert_eq!(guard(&["a", "a"]).repeated(), Some((1, 1)));
        assert_eq!(guard(&["x", "a", "a", "a"]).repeated(), Some((1, 2)));
        assert_eq!(guard(&["a", "bb", "a", "bb"]).repeated(), Some((2, 1)));
        assert_eq!(guard(&["a", "bb", "ccc", "a", "bb", "ccc"]).repeated(), Some((3, 1)));
        let nss = ["n", "ss", "ss", "n", "ss", "ss", "n", "ss", "ss"];
        assert_eq!(guard(&nss).repeated(), Some((3, 2)), "a cycle of three, not a pair");
        assert_eq!(guard(&nss).would_repeat("n"), Some(3));
        assert_eq!(
            super::super::snapshot::without_ref_numbers("[e12] link → x; ref=e3 [e] e5"),
            "[e] link → x; ref=e [e] e5"
        );
        assert_eq!(guard(&["a", "a", "a"]).would_repeat("a"), Some(1));
        assert_eq!(guard(&["a", "a", "a"]).would_repeat("b"), None);
        assert_eq!(guard(&["a", "bb", "a", "bb", "a", "bb"]).would_repeat("a"), Some(2));
        assert_eq!(guard(&["a", "bb", "a", "bb", "a"]).would_repeat("bb"), None, "only a third repeat is held");
        assert_eq!(guard(&["a", "bb", "a", "bb", "a", "bb"]).would_repeat("bb"), Some(2), "any call of the cycle");
        // The same call with a new result each time (a scroll that moves) is no loop.
        let mut g = LoopGuard::default();
        for i in 0..5 {
            g.push("scroll".into(), i);
        }
        assert_eq!((g.repeated(), g.would_repeat("scroll")), (None, None));
    }

    #[test]
    fn guard_loop_note_then_loop_hold_fire_on_the_same_snapshot_again_and_again() {
        let snap = "browser_snapshot {}";
        assert_eq!(guard(&[snap, snap]).repeated(), Some((1, 1)), "loop_note: the first repeat");
        assert_eq!(guard(&[snap, snap, snap]).repeated(), Some((1, 2)), "loop_note: the page shown");
        assert_eq!(guard(&[snap, snap, snap]).would_repeat(snap), Some(1), "loop_hold: not run a fourth time");
    }

    #[test]
    fn guard_loop_note_and_loop_hold_are_quiet_on_a_next_button_and_a_shell_s_commands() {
        // The same "Next" click, page after page: each result is new.
        let mut g = LoopGuard::default();
        for page in 0..6 {
            g.push("browser_click {\"selector\":\"ref=e9\"}".into(), page);
        }
        assert_eq!((g.repeated(), g.would_repeat("browser_click {\"selector\":\"ref=e9\"}")), (None, None));
        // A shell's commands, one after another, answering alike.
        let mut g = LoopGuard::default();
        for i in 0..6 {
            g.push(format!("run_command {{\"command\":\"wc -l /srv/part-{i}.txt\"}}"), 7);
        }
        assert_eq!((g.repeated(), g.would_repeat("run_command {\"command\":\"wc -l /srv/part-6.txt\"}")), (None, None));
    }
}

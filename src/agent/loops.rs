//! The loop detector (both profiles): every result is remembered as its call's name and
//! arguments and a hash of its answer (ref numbers left out); a loop is the newest calls
//! repeating with period 1, 2 or 3, results included, so a repeat that brings something new is
//! no loop. It also keeps the streak of one tool, how each call failed, and the files each URL
//! and page became. The units that act on it are in `guards/`: `loop_note`, `loop_hold`,
//! `streak_hold`, `failed_hold`, `done_before`; a second call held back soon after the first
//! marks the session stuck (`stuck_deliver` then gives it a last chance).
//!
//! Invariant: a held-back call is answered like any other call, so the conversation stays
//! complete; the detector remembers every result, whichever units are on.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Block;
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
pub(super) const SHOWN: usize = 120;
/// One tool called this often in a row, whatever its arguments, gets a note; past `STREAK_HOLD`
/// it is held back (a small model saving the same page under ever new names, say), but for
/// run_command, whose new commands are a shell session's work.
pub(super) const STREAK_NOTE: usize = 5;
pub(super) const STREAK_HOLD: usize = 8;
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
    /// Whether the newest call answered as the one before it.
    same_answer: bool,
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
    pub(super) fn would_repeat(&self, call: &str) -> Option<usize> {
        let n = self.history.len();
        (1..=MAX_PERIOD)
            .find(|&p| self.periodic_suffix(p) >= 3 * p && self.history.iter().skip(n - p).any(|e| e.call == call))
    }

    /// The loop the newest call completes: its period and how often it has repeated (the
    /// period repeated most; `N S S N S S` is a cycle of three, not a pair of snapshots).
    pub(super) fn repeated(&self) -> Option<(usize, usize)> {
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
    pub(super) fn describe(&self, p: usize) -> String {
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

impl LoopGuard {
    /// Whether `call` failed the same way `FAILED_HOLD` times (`failed_hold`).
    pub(super) fn failed_alike(&self, call: &str) -> bool {
        self.failed.get(call).is_some_and(|(_, n)| *n >= FAILED_HOLD)
    }

    /// The tool of the newest calls and how many times in a row it was called.
    pub(super) fn streak(&self) -> (&str, usize) {
        (&self.streak.0, self.streak.1)
    }

    /// Whether the newest call answered as the one before it.
    pub(super) fn same_answer(&self) -> bool {
        self.same_answer
    }

    /// The file a URL was downloaded as before.
    pub(super) fn downloaded(&self, url: &str) -> Option<&String> {
        self.downloaded.get(url)
    }

    /// The file a page (by its identity) was printed as before.
    pub(super) fn printed(&self, page: u64) -> Option<&String> {
        self.printed.get(&page)
    }
}

/// A call as the loop detector remembers it: its name and arguments.
pub(super) fn call_key(name: &str, input: &Value) -> String {
    format!("{name} {input}")
}

impl Agent {
    /// Every result (run, or answered from before) remembered: its page, the streak, the files
    /// it made, how it failed, the call and its answer (the notes after it are not part of it).
    pub(super) fn observe_result(&mut self, call: &super::guards::Call, outcome: &ToolOutcome) {
        let (name, input) = (call.name.as_str(), &call.input);
        if self.focus.after_call() {
            // A page not seen before: what failed on the earlier ones may work here.
            self.loops.failed.clear();
        }
        self.loops.streak = match std::mem::take(&mut self.loops.streak) {
            (tool, n) if tool == name => (tool, n + 1),
            _ => (name.to_string(), 1),
        };
        self.note_download(name, input, outcome);
        self.note_print(name, outcome);
        let key = call_key(name, input);
        let answer = result_hash(outcome);
        if outcome.is_error {
            let (last, n) = self.loops.failed.entry(key.clone()).or_insert((answer, 0));
            *n = if *last == answer { *n + 1 } else { 1 };
            *last = answer;
        } else {
            self.loops.failed.remove(&key);
        }
        self.loops.same_answer = std::mem::replace(&mut self.loops.last_answer, answer) == answer;
        self.loops.push(key, if repeat_is_loop(name) { 0 } else { answer });
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
    pub(super) fn page_identity(&self) -> Option<u64> {
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

    /// The session's task (or goal) again: small models lose it in long contexts.
    pub(super) fn task_line(&self) -> String {
        match (&self.record.instruction, &self.record.goal) {
            (Some(task), _) => format!("Your task: {task}"),
            (None, Some(goal)) => format!("Your goal: {goal}"),
            (None, None) => String::new(),
        }
    }

    /// A call held back (`loop_hold`, `streak_hold`, `failed_hold`): its answer, naming real
    /// choices (a small model told only "do something different" repeats itself). A second
    /// one soon after marks the session stuck.
    pub(super) fn held_back(&mut self, what: &str, because: &str) -> ToolOutcome {
        let persisting = self.loops.last_held.is_some_and(|s| self.step.saturating_sub(s) <= PERSIST_WITHIN);
        self.loops.last_held = Some(self.step);
        if persisting {
            self.loops.stuck = Some(format!("stuck: the model kept repeating {what}"));
        }
        let unopened = self.grounding.unopened();
        let instead = if self.record.session_type == crate::protocol::SessionType::Shell {
            "Do something different: `find DIR -type f` lists every file below a folder, `grep -rl WORD DIR` \
             finds files by what they hold. Or finish and say what is missing."
                .to_string()
        } else if unopened.is_empty() {
            "Do something different, or finish and say what is missing.".to_string()
        } else {
            // The links' names and addresses are the pages' words.
            format!(
                "Do something different: pages not opened yet (browser_navigate to one):\n{}\nOr finish and say what is missing.",
                self.boundary.wrap(&unopened.join("\n"))
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

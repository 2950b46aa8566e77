//! What an action changed on the page: the answer of `browser_click`, `browser_type`,
//! `browser_press_key`, `browser_select_option` and `browser_fill_form`.
//!
//! Before the action the page's snapshot lines are read (with refs) and its changes watched;
//! after it, once the page has been still a moment (a suggestion list shown after a debounce),
//! or once the document that a navigation it started brings has loaded (10 s at most; told by
//! the Navigation API, or by the helpers' world gone), they are read again. A new document or another URL is a new page: the answer is the whole
//! snapshot. Otherwise the answer is the lines that are new or changed (a suggestion list, a
//! dialog, an error line, a field's new value), with their refs, in page order, and how many
//! lines went; at most `MAX_LINES` lines and `MAX_CHARS` characters, else the whole snapshot
//! (most of the page changed). The counts and whether the page is new are fields
//! (`changed: {page: "new" | "same", added, updated, removed}`) for the controller; the lines
//! (`changes`) are for the model. A value the action typed is never echoed: a field that holds
//! exactly what was typed reads `(value as typed)`.

use super::Browser;
use super::snapshot::shaped;
use crate::error::WorkerError;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The most lines, and characters, of changes shown; more is the whole page.
const MAX_LINES: usize = 40;
const MAX_CHARS: usize = 2000;
/// Waiting for what an action sets off (ms): still this long after the last change, this long
/// when nothing changes at all, and never longer than the last.
const STILL_MS: u64 = 150;
const FIRST_MS: u64 = 350;
const MOST_MS: u64 = 2000;
/// How long a navigation the action started may take to bring its document.
const LEAVING: std::time::Duration = std::time::Duration::from_secs(10);
/// How the snapshot cuts a field's value (`ends` in snapshot.js: `RUN_CHARS`, `VALUE_TAIL`), in
/// UTF-16 units.
const VALUE_CHARS: usize = 300;
const VALUE_TAIL: usize = 100;

/// The page before an action.
pub(super) struct Before {
    doc: Value,
    url: Value,
    lines: Vec<String>,
    sign_in: bool,
    /// The helpers' world then: Chromium drops it as soon as a navigation starts, long before
    /// the new document comes.
    world: Option<u64>,
}

/// Lines new or changed after an action, and how many went.
#[derive(Debug, PartialEq)]
pub(super) struct Diff {
    /// In page order.
    pub added: Vec<String>,
    /// Of `added`, those whose ref was on a line before (the same element, changed).
    pub updated: usize,
    /// Lines gone, not counting those `updated` replaced.
    pub removed: usize,
}

impl Browser {
    /// The page as it is before an action, with a watch on it for what the action sets off.
    /// `None` when it cannot be read: the action's answer is then the whole page.
    pub(super) fn before_action(&mut self, p: &Value) -> Option<Before> {
        self.eval("__ac.watch()").ok()?;
        let v = self.read_page(p, true).ok()?;
        Some(Before {
            doc: v["doc"].clone(),
            url: v["url"].clone(),
            lines: lines_of(&v),
            sign_in: v["sign_in"] == true,
            world: self.r().ok()?.world,
        })
    }

    /// `result` with what the action changed (see the module header). `typed`: the texts the
    /// action typed, never echoed.
    pub(super) fn with_changes(
        &mut self,
        result: Value,
        before: Option<Before>,
        p: &Value,
        typed: &[&str],
    ) -> Result<Value, WorkerError> {
        // Best effort: a page that navigated has no watch, and answers at once.
        let quiet = self.eval(&format!("__ac.quiet({STILL_MS}, {FIRST_MS}, {MOST_MS})"));
        let Some(before) = before else { return self.then_snapshot(result, p) };
        let world_lost = self.r().map(|r| r.world).ok() != Some(before.world);
        if world_lost || quiet.is_ok_and(|q| q == "leaving") {
            self.wait_for_new_document(&before.doc);
        }
        let mut map = match result {
            Value::Object(m) => m,
            other => [("result".to_string(), other)].into_iter().collect(),
        };
        let after = match self.read_page(p, true) {
            Ok(v) => v,
            Err(_) => return self.then_snapshot(Value::Object(map), p),
        };
        if after["doc"] != before.doc || after["url"] != before.url {
            map.insert("changed".into(), json!({"page": "new"}));
            extend(&mut map, shaped(&after));
            return Ok(Value::Object(map));
        }
        let diff = diff(&before.lines, &lines_of(&after));
        let added = diff.added.len() - diff.updated;
        map.insert(
            "changed".into(),
            json!({"page": "same", "added": added, "updated": diff.updated, "removed": diff.removed}),
        );
        let shown: Vec<String> = diff.added.iter().map(|l| as_typed(l, typed)).collect();
        if shown.len() > MAX_LINES || shown.iter().map(|l| l.len() + 1).sum::<usize>() > MAX_CHARS {
            extend(&mut map, shaped(&after));
            return Ok(Value::Object(map));
        }
        map.insert("changes".into(), json!(render(&diff, &shown)));
        if after["sign_in"] == true && !before.sign_in {
            map.insert("sign_in".into(), json!(true));
        }
        Ok(Value::Object(map))
    }
}

impl Browser {
    /// Another document is on its way: wait until it replaced this one and loaded (bounded; a
    /// navigation that turns into a refused download never replaces it).
    fn wait_for_new_document(&mut self, doc: &Value) {
        let deadline = Instant::now() + LEAVING;
        while Instant::now() < deadline {
            let now = self.eval("String(performance.timeOrigin)").unwrap_or(Value::Null);
            if !now.is_null() && now != *doc {
                let _ = self.wait_ready(deadline.saturating_duration_since(Instant::now()));
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

fn extend(map: &mut Map<String, Value>, snap: Value) {
    if let Value::Object(snap) = snap {
        map.extend(snap);
    }
}

/// Every line of a snapshot's items (a table's rows are lines of their own).
fn lines_of(v: &Value) -> Vec<String> {
    let items = v["lines"].as_array().map(Vec::as_slice).unwrap_or_default();
    items.iter().filter_map(Value::as_str).flat_map(str::lines).map(str::to_string).collect()
}

/// The ref a line starts with (`[e12] …`, indented in a frame).
fn ref_of(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix('[')?.split_once("] ").map(|(r, _)| r)
}

/// What is new or changed in `after` against `before`, line by line (the same line twice
/// counts twice).
pub(super) fn diff(before: &[String], after: &[String]) -> Diff {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for l in before {
        *left.entry(l.as_str()).or_default() += 1;
    }
    let mut added = Vec::new();
    for l in after {
        match left.get_mut(l.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => added.push(l.clone()),
        }
    }
    let mut gone_refs = HashSet::new();
    let mut gone = 0;
    for l in before {
        if let Some(n) = left.get_mut(l.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            gone += 1;
            gone_refs.extend(ref_of(l));
        }
    }
    let updated = added.iter().filter(|l| ref_of(l).is_some_and(|r| gone_refs.contains(r))).count();
    Diff { added, updated, removed: gone - updated }
}

/// The model's lines: a head with the counts, then the lines.
fn render(diff: &Diff, shown: &[String]) -> String {
    let new = diff.added.len() - diff.updated;
    let counts: Vec<String> = [(new, "new"), (diff.updated, "changed"), (diff.removed, "gone")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if counts.is_empty() {
        return "Nothing changed on the page.".into();
    }
    let mut out = format!("What changed on the page (lines: {}):", counts.join(", "));
    for l in shown {
        out.push('\n');
        out.push_str(l);
    }
    out
}

/// `line` with a value that is exactly one of `typed` written `(value as typed)`.
fn as_typed(line: &str, typed: &[&str]) -> String {
    let mut out = line.to_string();
    for t in typed.iter().filter(|t| !t.trim().is_empty()) {
        let shown = format!(" value={}", json!(ends(&norm(t))));
        if out.contains(&shown) {
            out = out.replace(&shown, " (value as typed)");
        }
    }
    out
}

/// `norm` of page.js: runs of white space as one space, trimmed.
fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `ends` of snapshot.js: a value over `VALUE_CHARS` UTF-16 units (as the page counts) is its
/// start, ` … ` and its last `VALUE_TAIL` units.
fn ends(s: &str) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    if units.len() <= VALUE_CHARS {
        return s.to_string();
    }
    let head = String::from_utf16_lossy(&units[..VALUE_CHARS - VALUE_TAIL - 3]);
    let tail = String::from_utf16_lossy(&units[units.len() - VALUE_TAIL..]);
    format!("{head} … {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn new_and_changed_lines_come_in_page_order_and_gone_ones_are_counted() {
        let before = lines(
            "[e1] heading 1 \"Search\"\n[e2] input text \"City\"\ntext \"Hello\"\ntext \"Hello\"\n[e3] button \"Go\"",
        );
        let after = lines(
            "[e1] heading 1 \"Search\"\n[e2] input text \"City\" value=\"Par\"\n[e4] option \"Paris\"\n\
             [e5] option \"Parma\"\ntext \"Hello\"\n[e3] button \"Go\"",
        );
        let d = diff(&before, &after);
        assert_eq!(
            d.added,
            lines("[e2] input text \"City\" value=\"Par\"\n[e4] option \"Paris\"\n[e5] option \"Parma\"")
        );
        assert_eq!((d.updated, d.removed), (1, 1), "the field changed; one of the two Hellos went");
        let text = render(&d, &d.added);
        assert!(text.starts_with("What changed on the page (lines: 2 new, 1 changed, 1 gone):\n[e2]"), "{text}");
        assert!(text.ends_with("[e5] option \"Parma\""), "{text}");
        let same = diff(&before, &before);
        assert_eq!(render(&same, &same.added), "Nothing changed on the page.");
    }

    #[test]
    fn a_value_exactly_as_typed_is_not_echoed() {
        let line = "[e2] input text \"User\" name=user value=\"alice smith\" (required)";
        assert_eq!(
            as_typed(line, &["alice   smith "]),
            "[e2] input text \"User\" name=user (value as typed) (required)"
        );
        assert_eq!(as_typed(line, &["alice"]), line, "a value the page changed shows");
        let long = format!("{}{}", "x".repeat(250), "y".repeat(150));
        let shown =
            format!("[e3] textarea \"Note\" value={}", json!(format!("{} … {}", "x".repeat(197), "y".repeat(100))));
        assert_eq!(as_typed(&shown, &[long.as_str()]), "[e3] textarea \"Note\" (value as typed)");
        assert_eq!(ends(&"😀".repeat(151)).encode_utf16().count(), VALUE_CHARS, "UTF-16 units, as the page counts");
    }

    #[test]
    fn lines_of_splits_a_tables_rows() {
        let v = json!({"lines": ["[e1] table 2×1\n    | a |\n    | b |", "text \"x\""]});
        assert_eq!(lines_of(&v).len(), 4);
        assert_eq!(ref_of("  [e7] button \"Go\""), Some("e7"));
        assert_eq!(ref_of("    | a |"), None);
    }
}

//! Page snapshots on the controller's side: how a worker result that carries one reads to the
//! model, asking the worker for the page as it is now (for a loop note, after a login), and
//! which links lead to a file. A line's grammar is `line.rs`'s.
//!
//! A snapshot is text with one element per line; inside JSON its line breaks would be `\n`
//! escapes, which small models read badly. So the result's other fields stay JSON and the
//! snapshot (or, after an action on the same page, the lines it changed) follows them as
//! plain lines.

pub(super) mod line;

pub(super) use line::{before_value, page_url};

use super::Agent;
use crate::exec::Answer;
use crate::protocol::SessionType;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// The shortest snapshot part, whatever the window (the worker's own minimum is 500).
const MIN_SNAPSHOT_CHARS: usize = 1500;

/// Take the snapshot text out of a worker result, if it has one.
pub(super) fn take(data: &mut Value) -> Option<String> {
    match data.as_object_mut()?.remove("snapshot")? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Take what an action changed on its page out of a worker result (`changes`: lines with
/// refs, read like a snapshot's; the counts stay in `changed`). It is not the page: the latest
/// page seen stays the one before.
pub(super) fn take_changes(data: &mut Value) -> Option<String> {
    match data.as_object_mut()?.remove("changes")? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A result's JSON followed by its snapshot's (or its changes') lines. A page's header line
/// already says its title, URL and HTTP status, and an action's changes on the page it stayed on
/// say their counts (the title and URL are the ones the model has): the JSON line keeps the rest,
/// and is left out when nothing is left.
pub(super) fn render(answer: &mut Answer, page: Option<String>) -> String {
    let Some(page) = page else {
        return match (&mut answer.tree, &answer.bulk) {
            (Value::String(s), None) => std::mem::take(s),
            _ => answer.text(""),
        };
    };
    let data = &mut answer.tree;
    let same_page = data["changed"]["page"] == "same";
    if let Some(map) = data.as_object_mut().filter(|_| same_page || line::is_page_head(&page)) {
        map.remove("title");
        map.remove("status");
        map.remove("url");
        if same_page {
            map.remove("changed");
        }
        if map.is_empty() && answer.bulk.is_none() {
            return page;
        }
    }
    answer.text(&format!("\n{page}"))
}

/// A page's or result's identity: its text without ref numbers, hashed.
pub(super) fn hash_of(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    without_ref_numbers(text).hash(&mut h);
    h.finish()
}

/// `text` with every ref `e123` (after `[` or `=`) written as `e`.
pub(super) fn without_ref_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['[', '=']) {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('e') {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 {
                out.push('e');
                rest = &after[digits..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The ref a selector names (`ref=e12`, or a bare `e12`), if it names one.
pub(super) fn ref_in(selector: &str) -> Option<&str> {
    let s = selector.trim().trim_start_matches('[').trim_end_matches(']');
    let s = s.strip_prefix("ref=").or_else(|| s.strip_prefix("ref =")).unwrap_or(s).trim();
    line::is_ref(s).then_some(s)
}

/// The line of `page` that shows ref `r`, without the ref.
pub(super) fn line_of<'a>(page: &'a str, r: &str) -> Option<&'a str> {
    line::find(page, r).map(|l| l.body)
}

/// One element line of a snapshot, `[e3] select "Size" name=size: S | M (selected)`: its ref,
/// its kind (the first word after the ref) and the rest of the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Element<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub rest: &'a str,
}

/// Input types that take no text: boxes, buttons, files.
const NO_TEXT_INPUTS: &[&str] = &["checkbox", "radio", "button", "submit", "reset", "image", "file", "hidden"];

impl Element<'_> {
    /// A field typing goes into: a text-like input, a text area, a slider or spin button.
    pub fn takes_text(&self) -> bool {
        let input_type = self.rest.split_whitespace().next().unwrap_or("");
        match self.kind {
            "input" => !NO_TEXT_INPUTS.contains(&input_type),
            "textarea" | "combobox" | "searchbox" | "textbox" | "slider" | "spinbutton" => true,
            _ => false,
        }
    }

    /// A checkbox or a radio.
    pub fn is_box(&self) -> bool {
        self.kind == "input" && matches!(self.rest.split_whitespace().next(), Some("checkbox" | "radio"))
    }

    /// A select's options as the worker takes them (`Mug=mug`), or `None` where the list is
    /// cut short or the select takes several.
    pub fn options(&self) -> Option<Vec<&str>> {
        let (head, list) = self.rest.split_once(": ")?;
        if head.contains("(multiple)") || list.contains("| … ") {
            return None;
        }
        Some(list.split(" | ").map(|o| o.trim_end_matches(" (selected)").trim()).filter(|o| !o.is_empty()).collect())
    }
}

/// Every element line of `page`, in order (indented lines too).
pub(super) fn elements(page: &str) -> Vec<Element<'_>> {
    line::lines(page)
        .filter_map(|line| {
            let (kind, rest) = line.kind();
            Some(Element { id: line.id()?, kind, rest })
        })
        .collect()
}

/// Endings of links that lead to a file to keep rather than a page to read. A click on one
/// opens a viewer whose snapshot is empty and whose refs are not the page's (small models then
/// act on refs that are gone); a user who clicks it means "get this file". Such a link is not a
/// page left to open either (`Grounding::unopened`).
const FILE_ENDINGS: &[&str] = &[
    ".pdf", ".zip", ".gz", ".tgz", ".tar", ".7z", ".csv", ".xlsx", ".xls", ".docx", ".doc", ".pptx", ".odt", ".ods",
    ".epub", ".mp3", ".mp4", ".deb", ".rpm", ".iso", ".dmg", ".exe", ".msi",
];

/// A snapshot line's link, `[e3] link "Text" → URL` (with its ref or without): text and URL.
pub(super) fn link_in(line: &str) -> Option<(&str, &str)> {
    line::Line::parse(line).link()
}

/// The URL of a snapshot line `link "Text" → URL` when it leads to a file (by its path's ending).
pub(super) fn file_link(line: &str) -> Option<&str> {
    link_in(line).map(|(_, url)| url).filter(|url| is_file_url(url))
}

/// Whether a URL leads to a file to keep (by its path's ending).
pub(super) fn is_file_url(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or(url).to_ascii_lowercase();
    url.starts_with("http") && FILE_ENDINGS.iter().any(|e| path.ends_with(e))
}

impl Agent {
    /// The longest snapshot part for this session's model: `agent.snapshot_chars`, and at most
    /// half its context window in characters (about a seventh of it in tokens), so a long page
    /// comes in parts instead of flooding a small window.
    pub(super) fn snapshot_chars(&self) -> usize {
        let window_half = usize::try_from(self.context_window() / 2).unwrap_or(usize::MAX);
        self.runner.config().agent.snapshot_chars.min(window_half.max(MIN_SNAPSHOT_CHARS))
    }

    /// Take the snapshot out of a worker result, remembering it as the latest page seen.
    pub(super) fn take_page(&mut self, data: &mut Value) -> Option<String> {
        let page = take(data)?;
        self.focus.saw_page(&page);
        self.last_page = Some(page.clone());
        Some(page)
    }

    /// For the step log: the line of the element a `ref=` selector named, as last seen.
    pub(super) fn ref_target(&self, input: &Value) -> Option<String> {
        let r = ref_in(input["selector"].as_str()?)?;
        line_of(self.last_page.as_deref()?, r).map(str::to_string)
    }

    /// The page as it is now (browser sessions), or `None` (other sessions, or no answer).
    pub(super) fn current_snapshot(&mut self) -> Option<String> {
        if self.record.session_type != SessionType::Browser {
            return None;
        }
        let params = json!({"snapshot_chars": self.snapshot_chars()});
        let timeout = Duration::from_secs(self.runner.config().task.command_timeout_s);
        let mut data = self.runner.execute(Tool::BrowserSnapshot.name(), params, timeout).ok()?;
        self.runner.scrub_json(&mut data);
        let page = self.take_page(&mut data)?;
        Some(self.boundary.wrap(&render(&mut Answer::from(data), Some(page))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_to_files_are_told_from_links_to_pages() {
        assert!(is_file_url("http://h/files/guide.PDF?v=2"));
        assert!(is_file_url("https://h/export/sales.CSV#top"));
        assert!(!is_file_url("http://h/about.html"));
        assert!(!is_file_url("http://h/pdf"));
        assert!(!is_file_url("https://h/reports?format=pdf"), "a page that lists files");
        assert!(!is_file_url("https://h/view?file=report.pdf"), "a viewer page");
        assert!(!is_file_url("mailto:a@b.pdf"));
        assert_eq!(link_in("[e7] link \"a → b\" → https://h/x.zip"), Some(("a → b", "https://h/x.zip")));
        assert_eq!(
            link_in("  [e3] link \"About us\" → http://h/about.html"),
            Some(("About us", "http://h/about.html"))
        );
        assert_eq!(link_in("[e4] button \"Go\""), None);
    }

    #[test]
    fn a_result_line_says_only_what_its_page_lines_do_not() {
        let changes = "What changed on the page (lines: 1 new):\n[e9] option \"Paris\"".to_string();
        let stayed = serde_json::json!({"changed": {"page": "same", "added": 1, "updated": 0, "removed": 0},
            "clicked": "button", "text": "Go", "title": "Shop", "url": "http://h/a"});
        let text = render(&mut Answer::from(stayed), Some(changes.clone()));
        assert_eq!(text, format!("{{\"clicked\":\"button\",\"text\":\"Go\"}}\n{changes}"));
        let left = serde_json::json!({"changed": {"page": "new"}, "clicked": "a", "title": "B", "url": "http://h/b"});
        let text =
            render(&mut Answer::from(left), Some("Page: \"B\" — http://h/b\n[e1] link \"A\" → http://h/a".into()));
        assert!(text.starts_with("{\"changed\":{\"page\":\"new\"},\"clicked\":\"a\"}\nPage: "), "{text}");
        let nothing = serde_json::json!({"changed": {"page": "same", "added": 0, "updated": 0, "removed": 0},
            "title": "Shop", "url": "http://h/a"});
        assert_eq!(
            render(&mut Answer::from(nothing), Some("Nothing changed on the page.".into())),
            "Nothing changed on the page."
        );
    }
}

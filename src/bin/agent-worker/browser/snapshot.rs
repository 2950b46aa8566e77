//! Page snapshots for the model: what `browser_snapshot` returns, what is added to the result
//! of a tool that moves to another page (navigate, back, forward, submit; an action that left
//! its page, see `changes.rs`), and what a selector that matched nothing is answered with.
//!
//! The page side is `snapshot.js`: title, URL, HTTP status, then headings, links (absolute
//! `href`), buttons, fields with their values (never a password's; a number, range or date
//! field's bounds), selects with options, tables with their first rows, what the page makes
//! clickable (`clickable "Like"`), states (`(collapsed)`…), and short runs of text, each with a
//! ref `eN` that selectors accept as `ref=eN`. An element keeps its ref while its document
//! lives, and one that looks the same on a later page (values and state marks aside) gets the
//! ref it had (`ref_keys`, kept per session); new refs grow across a session's pages
//! (`ref_floor`), so a ref never names two things. Each session starts again at `e1`, so a
//! replay meets the refs it recorded. The text is bounded by the command's `snapshot_chars`; a
//! longer page comes in parts, `browser_snapshot {page: 2}` and on.

use super::Browser;
use super::util::js;
use crate::error::WorkerError;
use agent_controller::protocol::tools::Tool;
use agent_controller::protocol::worker::SIGN_IN_FORM;
use serde_json::{Value, json};

/// Characters of a snapshot when the command does not say (the controller's default too).
const DEFAULT_CHARS: u64 = 8000;
const MIN_CHARS: u64 = 500;
const MAX_CHARS: u64 = 100_000;
/// Elements remembered per session for their refs on later pages (each key a short line).
const MAX_KEYS: usize = 3000;

impl Browser {
    /// The page as the model reads it.
    pub(super) fn snapshot(&mut self, p: &Value) -> Result<Value, WorkerError> {
        self.read_page(p, false).map(|v| shaped(&v))
    }

    /// `__ac.snapshot` with the session's refs, the refs it gave kept for later pages; with
    /// `lines`, every line too (unbounded) and the document's name, for `changes.rs`.
    pub(super) fn read_page(&mut self, p: &Value, lines: bool) -> Result<Value, WorkerError> {
        let max = p["snapshot_chars"].as_u64().unwrap_or(DEFAULT_CHARS).clamp(MIN_CHARS, MAX_CHARS);
        if self.refs_reset {
            self.ref_keys.clear();
        }
        let known = Value::Object(self.ref_keys.clone());
        let part = p["page"].as_u64().unwrap_or(1).clamp(1, 1000);
        let v = self.eval(&format!(
            "__ac.snapshot({max}, {}, {}, {known}, {part}, {lines}, {})",
            self.ref_floor,
            self.refs_reset,
            js(SIGN_IN_FORM)
        ))?;
        self.refs_reset = false;
        if let Some(next) = v["next_ref"].as_u64() {
            self.ref_floor = self.ref_floor.max(next);
        }
        if let Some(keys) = v["keys"].as_object() {
            for (key, r) in keys {
                if self.ref_keys.len() < MAX_KEYS || self.ref_keys.contains_key(key) {
                    self.ref_keys.insert(key.clone(), r.clone());
                }
            }
        }
        Ok(v)
    }

    /// An action's result with the page as it is after it. If the page cannot be read yet (it
    /// is still changing), the action's result stands and says so.
    pub(super) fn then_snapshot(&mut self, result: Value, p: &Value) -> Result<Value, WorkerError> {
        let mut map = match result {
            Value::Object(m) => m,
            other => [("result".to_string(), other)].into_iter().collect(),
        };
        match self.snapshot(p) {
            Ok(Value::Object(snap)) => map.extend(snap),
            Ok(_) => {}
            Err(e) => {
                map.insert("snapshot".into(), json!(format!("(no snapshot: {e}; call browser_snapshot)")));
            }
        }
        Ok(Value::Object(map))
    }

    /// A selector or ref that matched nothing fails with the page added, so the next call can
    /// use a ref; a tool that only reads answers with the whole page instead, as a result, where
    /// the controller asks (`read_miss_page`, its unit of that name).
    pub(super) fn explain_miss(
        &mut self,
        tool: Tool,
        p: &Value,
        result: Result<Value, WorkerError>,
    ) -> Result<Value, WorkerError> {
        let message = match &result {
            Err(WorkerError::NoMatch(m)) => m.clone(),
            _ => return result,
        };
        let snap = match self.snapshot(p) {
            Ok(s) => s,
            Err(_) => return result,
        };
        let reads = matches!(
            tool,
            Tool::BrowserGetDom | Tool::BrowserGetText | Tool::BrowserScrapeLinks | Tool::BrowserScrapeTable
        );
        if reads && p["read_miss_page"] == true {
            let note = format!("{message}. The whole page is below instead: use a ref from it (selector `ref=eN`).");
            let mut out = json!({"found": false, "message": note});
            if let (Some(out), Value::Object(snap)) = (out.as_object_mut(), snap) {
                out.extend(snap);
            }
            return Ok(out);
        }
        let page = snap["snapshot"].as_str().unwrap_or_default();
        Err(WorkerError::NoMatch(format!(
            "{message}\n\nThe page as it is now (act on an element with selector `ref=eN`):\n{page}"
        )))
    }
}

/// What the model gets of `__ac.snapshot`'s answer: the page, and a password field or an error
/// status as facts the controller reads (not the snapshot's words).
pub(super) fn shaped(v: &Value) -> Value {
    let mut out = json!({"url": v["url"], "title": v["title"], "status": v["status"], "snapshot": v["snapshot"]});
    if v["sign_in"] == true {
        out["sign_in"] = json!(true);
    }
    if let Some(code) = v["status"].as_u64().filter(|c| *c >= 400) {
        out["warning"] = json!(format!(
            "the server answered HTTP {code}: this is an error page, not the page asked for; check the URL \
             (the links of a snapshot are absolute and work as they are)"
        ));
    }
    out
}

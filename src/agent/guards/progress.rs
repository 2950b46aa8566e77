//! `progress` (small profile, JSON action mode, before a turn, a hint): once a session has
//! acted twice on its pages, each request closes with its steps so far, one line each: what it
//! acted on (the element's line as the model saw it, without its ref) and what that did (a new
//! page and its title, or how many lines came, changed and went, or nothing). A small model on
//! a task of several dependent steps loses which of them are done, and repeats or skips one.
//!
//! Invariant: the steps come from the worker's fields (`changed`, `title`) and the page the
//! model saw; never a typed value; the list closes the view, never the journal.

use super::super::Agent;
use super::super::snapshot::{before_value, line_of, ref_in};
use super::{Modes, Unit};
use crate::llm::{Block, Role, joined_text};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::Progress,
    modes: Modes::JSON,
    evidence: "MiniWoB's 9 multi-step pages, three repeats paired (27th pass): JSON 3 → 4 of the 12 runs it \
     fired in (multi-layouts once won; 128 k → 97 k input tokens); Anthropic native 7 → 6 of 13 (multi-layouts \
     once lost; 122 k → 150 k), so it runs in JSON mode only. Own suite in JSON mode, one repeat of three: \
     3 → 3 of 6 (40 → 50 turns, 89 k → 141 k tokens without it); the keep rule is not met yet.",
};

/// The steps kept (the latest), and the most characters of an element's line in one.
const MAX_STEPS: usize = 8;
const TARGET_CHARS: usize = 70;
/// The latest messages searched for a line a result brought.
const SEARCHED: usize = 8;

/// What an acting tool did, as a verb before its target.
fn verb(tool: Tool, input: &Value) -> Option<String> {
    Some(match tool {
        Tool::BrowserClick => "clicked".into(),
        Tool::BrowserType => "typed into".into(),
        Tool::BrowserPressKey => format!("pressed {}", input["key"].as_str().unwrap_or("a key")),
        Tool::BrowserSelectOption => "chose in".into(),
        Tool::BrowserFillForm => {
            let n = input["fields"].as_array().map_or(0, Vec::len);
            return Some(format!("filled {n} field(s)"));
        }
        _ => return None,
    })
}

/// What the answer says the step did, from its fields.
fn effect(answer: &Value) -> Option<String> {
    let changed = &answer["changed"];
    match changed["page"].as_str()? {
        "new" => Some(match answer["title"].as_str().filter(|t| !t.is_empty()) {
            Some(t) => format!("a new page {}", serde_json::json!(t)),
            None => "a new page".into(),
        }),
        _ => {
            let n = |k: &str| changed[k].as_u64().unwrap_or(0);
            let parts: Vec<String> = [(n("added"), "new"), (n("updated"), "changed"), (n("removed"), "gone")]
                .iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, what)| format!("{n} {what}"))
                .collect();
            Some(if parts.is_empty() { "nothing changed".into() } else { format!("lines {}", parts.join(", ")) })
        }
    }
}

/// A message's texts: its own, and each tool result's.
fn texts_of(blocks: &[Block]) -> impl Iterator<Item = String> + '_ {
    blocks.iter().filter_map(|b| match b {
        Block::Text { text } => Some(text.clone()),
        Block::ToolResult { content, .. } => Some(joined_text(content, "\n")),
        _ => None,
    })
}

impl Agent {
    /// After an action's answer: its step, as the list will say it.
    pub(in crate::agent) fn progress_noted(&mut self, tool: Tool, input: &Value, answer: &mut Value) {
        let Some(verb) = verb(tool, input) else { return };
        let line = match tool {
            Tool::BrowserFillForm => None,
            _ => self.seen_line(input).or_else(|| input["selector"].as_str().map(str::to_string)),
        };
        // A value it held then is not what it holds now.
        let line = before_value(line.as_deref().unwrap_or_default());
        let line: String = line.chars().take(TARGET_CHARS).collect();
        let step = match (tool, line.is_empty()) {
            (_, true) => verb,
            (Tool::BrowserPressKey, false) => format!("{verb} on {line}"),
            _ => format!("{verb} {line}"),
        };
        let effect = effect(answer).map(|e| format!(" → {e}")).unwrap_or_default();
        let steps = &mut self.guard_state.progress;
        steps.push(format!("{step}{effect}"));
        if steps.len() > MAX_STEPS {
            steps.remove(0);
        }
    }

    /// The line of the element a `ref=` selector names, as the model last saw it: on the latest
    /// page, else among the latest results (what an action brought).
    fn seen_line(&self, input: &Value) -> Option<String> {
        let r = ref_in(input["selector"].as_str()?)?;
        let in_results = || {
            let mut texts = self.messages.iter().rev().take(SEARCHED).flat_map(|m| texts_of(&m.content));
            texts.find_map(|t| line_of(&t, r).map(str::to_string))
        };
        self.ref_target(input).or_else(in_results)
    }

    /// The request about to be sent: the steps so far, from the second.
    pub(in crate::agent) fn progress_view(&mut self) -> Option<String> {
        let steps = &self.guard_state.progress;
        if steps.len() < 2 || self.messages.last().map(|m| m.role) != Some(Role::User) {
            return None;
        }
        let list: Vec<String> = steps.iter().enumerate().map(|(i, s)| format!("{}. {s}", i + 1)).collect();
        let text = format!("(Your steps so far, the latest last)\n{}", self.boundary.wrap(&list.join("\n")));
        let n = steps.len();
        self.fire(Guard::Progress, &format!("{n} steps so far close the request"));
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_progress_says_a_steps_effect_from_the_answers_fields() {
        let same = json!({"changed": {"page": "same", "added": 1, "updated": 0, "removed": 1}});
        assert_eq!(effect(&same).as_deref(), Some("lines 1 new, 1 gone"));
        let nothing = json!({"changed": {"page": "same", "added": 0, "updated": 0, "removed": 0}});
        assert_eq!(effect(&nothing).as_deref(), Some("nothing changed"));
        let new = json!({"changed": {"page": "new"}, "title": "Checkout"});
        assert_eq!(effect(&new).as_deref(), Some("a new page \"Checkout\""));
        assert_eq!(effect(&json!({"clicked": "button"})), None, "no fields, no effect said");
        assert_eq!(verb(Tool::BrowserPressKey, &json!({"key": "Enter"})).as_deref(), Some("pressed Enter"));
        assert_eq!(verb(Tool::BrowserScroll, &json!({})), None, "a scroll is no step of the task");
    }
}

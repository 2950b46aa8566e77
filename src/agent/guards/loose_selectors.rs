//! `loose_selectors` (small profile, in the worker, a repair): a selector in a spelling small
//! models write for what they mean — a ref as `[ref=e4]`, `e4` or `REF = e4`, a field's name or
//! id as `ref=email` or `name=email`, `button=Send`, jQuery's `:contains(…)`, a label's
//! `text=` meaning its field — is read as meant, and an option named by part of its text is
//! chosen. The worker reads them only for a command sent
//! with `loose_selectors: true`, which this unit decides, and reports each one it read
//! (`read_as`), which becomes this unit's log event and is not shown to the model.
//!
//! Invariant: off, a selector is CSS, `ref=e12`, `text=…` or `…:has-text(…)`, and anything
//! else is the browser's own error.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::SessionType;
use crate::protocol::guards::Guard;
use crate::protocol::tools::{Runs, Tool};
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::LooseSelectors,
    modes: Modes::ALL,
    evidence: "moved from the worker's page helpers, where they ran in every session. One paired repeat \
     (0652cf9, OpenAI native, 9 multi-step MiniWoB pages): fired on multi-layouts only, 0 → 0. MiniWoB's 9 multi-step pages, JSON, three repeats paired \
     (f178551): 3 → 2 in the 12 runs it fired in; OpenAI native (024f699): did not fire; Anthropic native \
     (16f7a63): 1 → 0 in 1. Not yet the keep rule's three with a win.",
};

/// What the worker's `read_as` says, one line per selector.
fn reads(answer: &Value) -> Vec<String> {
    let Some(read) = answer["read_as"].as_array() else { return Vec::new() };
    read.iter()
        .map(|r| format!("`{}` read as {}", r["selector"].as_str().unwrap_or(""), r["read_as"].as_str().unwrap_or("")))
        .collect()
}

impl Agent {
    /// A browser command's parameters: `loose_selectors`, always sent (false where the unit is off).
    pub(in crate::agent) fn loose_selectors_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if matches!(tool.spec().runs, Runs::Target(SessionType::Browser)) {
            params["loose_selectors"] = on.into();
        }
    }

    /// After the answer: each spelling read is logged as this unit's, and taken off the answer.
    pub(in crate::agent) fn loose_selectors_read(&mut self, _tool: Tool, _input: &Value, answer: &mut Value) {
        for read in reads(answer) {
            self.fire(Guard::LooseSelectors, &read);
        }
        if let Some(fields) = answer.as_object_mut() {
            fields.remove("read_as");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_loose_selectors_logs_each_spelling_the_worker_read() {
        let answer = json!({"clicked": true, "read_as": [
            {"selector": "[ref=e4]", "read_as": "ref=e4"},
            {"selector": "name=email", "read_as": "the element named email"}]});
        assert_eq!(reads(&answer), ["`[ref=e4]` read as ref=e4", "`name=email` read as the element named email"]);
        assert!(reads(&json!({"clicked": true})).is_empty());
    }
}

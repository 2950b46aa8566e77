//! `tool_advice` (small profile, in the worker, a hint): a tool's answer says what to do next
//! where a small model stalls — a click on a text field, that it is typed into (a read-only one:
//! that its value is chosen from what the click opened); a table read without a file name, how
//! to keep it as one. The worker adds these words (`next`, `to_save`) only for a command sent
//! with `advice: true`, which this unit decides; each answer that carries them is its event.
//!
//! Invariant: off, the answers are the facts alone (what was clicked, the table's rows), and
//! nothing tells the model which tool to call.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ToolAdvice,
    modes: Modes::ALL,
    evidence: "moved from the worker's click and table reads, where it ran in every session and every profile; \
     not yet ablated.",
};

/// The tools whose answers the worker gives advice in.
fn advised(tool: Tool) -> bool {
    matches!(tool, Tool::BrowserClick | Tool::BrowserScrapeTable)
}

/// The advice an answer carries, if any.
fn advice(answer: &Value) -> Option<&str> {
    answer["next"].as_str().or_else(|| answer["to_save"].as_str())
}

impl Agent {
    /// A click's or table read's parameters: `advice`, always sent (false where the unit is off).
    pub(in crate::agent) fn tool_advice_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if advised(tool) {
            params["advice"] = on.into();
        }
    }

    /// After the answer: advice in it is this unit's event.
    pub(in crate::agent) fn tool_advised(&mut self, tool: Tool, _input: &Value, answer: &mut Value) {
        if let Some(words) = advice(answer).filter(|_| advised(tool)) {
            let words = words.chars().take(80).collect::<String>();
            self.fire(Guard::ToolAdvice, &format!("the answer advises: {words}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_tool_advice_reads_the_advice_fields_only() {
        assert!(advice(&json!({"clicked": "input", "next": "a text field: type into it"})).is_some());
        assert!(advice(&json!({"rows": 3, "csv": "a\n", "to_save": "call it again with a filename"})).is_some());
        assert_eq!(advice(&json!({"clicked": "button", "text": "next"})), None, "a button's text is no advice");
    }
}

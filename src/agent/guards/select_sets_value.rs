//! `select_sets_value` (small profile, in the worker, a redirect): `browser_select_option` on a
//! field that is no select but holds a value a person picks — a date, time, number, range or
//! colour field, an ARIA slider or spin button — sets that value as `browser_type` would (small
//! models choose a date or a quantity "as an option"). The worker does so only for a command
//! sent with `select_sets_value: true`, which this unit decides; its answer's `set` (the value
//! the field holds now) becomes this unit's log event.
//!
//! Invariant: off, select_option chooses in a select only; on another field it is refused with
//! what the field is and the tool that sets it.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::SelectSetsValue,
    modes: Modes::ALL,
    evidence: "moved from the worker's select_option, where it ran in every session and every profile. MiniWoB's 9 multi-step pages, OpenAI native, three repeats paired \
     (024f699): 3 → 3 in the 3 runs it fired in (use-spinner); Anthropic native (16f7a63): 3 → 3 in 3.",
};

/// Whether a select_option's answer is a value set, not an option chosen (a select answers
/// `selected`).
fn value_set(answer: &Value) -> bool {
    answer.get("set").is_some() && answer.get("selected").is_none()
}

impl Agent {
    /// A select_option's parameters: `select_sets_value`, always sent (false where the unit is off).
    pub(in crate::agent) fn select_sets_value_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if tool == Tool::BrowserSelectOption {
            params["select_sets_value"] = on.into();
        }
    }

    /// After the answer: a value set instead of an option chosen is this unit's event.
    pub(in crate::agent) fn select_set_a_value(&mut self, tool: Tool, input: &Value, answer: &mut Value) {
        if tool == Tool::BrowserSelectOption && value_set(answer) {
            let field = input["selector"].as_str().unwrap_or("the field");
            self.fire(Guard::SelectSetsValue, &format!("`{field}` is no select: its value was set"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_select_sets_value_tells_a_value_set_from_an_option_chosen() {
        assert!(value_set(&json!({"set": "2024-03-05", "kind": "date"})));
        assert!(value_set(&json!({"set": 50, "kind": "slider", "keys": 1, "asked": 52})));
        assert!(!value_set(&json!({"selected": "g", "label": "Green"})), "a select's choice is the tool's own");
    }
}

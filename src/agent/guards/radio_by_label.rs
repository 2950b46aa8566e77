//! `radio_by_label` (small profile, in the worker, a repair): a fill that gives a radio another
//! radio's label (`{"selector": "ref=e6", "value": "Express"}` on the Standard radio: small
//! models name the group by its first radio and the choice by its label) checks the radio of
//! that label in the same group. The worker reads it so only for a command sent with
//! `radio_by_label: true`, which this unit decides, and marks each such field in its answer
//! (`chosen_by_label`), which becomes this unit's log event and is taken off the answer.
//!
//! Invariant: off, a radio takes true or false or its own label, and another value is refused
//! with the group's choices named.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::RadioByLabel,
    modes: Modes::ALL,
    evidence: "moved from the worker's fill, where it ran in every session and every profile; not yet \
     ablated.",
};

/// How many fields of a fill's answer the worker checked by another radio's label.
fn chosen_by_label(answer: &Value) -> usize {
    answer["filled"].as_array().map_or(0, |f| f.iter().filter(|f| f["chosen_by_label"] == true).count())
}

impl Agent {
    /// A fill's parameters: `radio_by_label`, always sent (false where the unit is off).
    pub(in crate::agent) fn radio_by_label_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if tool == Tool::BrowserFillForm {
            params["radio_by_label"] = on.into();
        }
    }

    /// After the answer: each radio checked by another's label is this unit's, the mark removed.
    pub(in crate::agent) fn radios_chosen_by_label(&mut self, tool: Tool, _input: &Value, answer: &mut Value) {
        if tool != Tool::BrowserFillForm {
            return;
        }
        for _ in 0..chosen_by_label(answer) {
            self.fire(Guard::RadioByLabel, "a radio given another radio's label: that one checked");
        }
        for field in answer.get_mut("filled").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(f) = field.as_object_mut() {
                f.remove("chosen_by_label");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_radio_by_label_counts_the_fields_the_worker_marked() {
        let answer = json!({"filled": [{"selector": "ref=e2", "filled": true},
            {"selector": "ref=e7", "checked": true, "chosen_by_label": true}, {"selector": "ref=e9", "checked": true}]});
        assert_eq!(chosen_by_label(&answer), 1);
        assert_eq!(chosen_by_label(&json!({"clicked": "input"})), 0, "not a fill");
    }
}

//! `argument_repair` (small profile, before a call, as it runs): arguments the tool does not
//! take left out, one item where a list is taken made a list, a required `path`/`url`/`filename`
//! found under another argument's name moved into place (`util/schema.rs` finds each), each said
//! to the model after the result. The step keeps the arguments as the model wrote them (the
//! loop detector and a replay read those).
//!
//! Invariant: at most `MAX_REPAIRS` repairs, made one after another on one call in one walk:
//! the call never re-enters the pipeline.

use super::super::Agent;
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::util::schema;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ArgumentRepair,
    modes: Modes::ALL,
    evidence: "own 14, this agent, JSON: 3 → 2 of the 4 runs rerun (page-pdf: an unknown key refused, then \
               stuck); it did not fire in the native runs. MiniWoB, JSON, the six pages where it fires, three \
               repeats: 5 → 3 (scroll-text-2 twice). Stays.",
};

/// The most repairs one call gets (one of each kind, and one more).
const MAX_REPAIRS: usize = 4;

/// One repair of `input` against `schema`: the arguments mended, what the log says, the note
/// for the model (none for a list of one).
fn repair(name: &str, schema: &Value, input: &Value) -> Option<(Value, String, Option<String>)> {
    if let Some(list) = schema::as_list_of_one(schema, input) {
        return Some((list, format!("{name}: a list of one"), None));
    }
    if let Some((fixed, to, from)) = schema::moved_required(schema, input) {
        let note = format!("(`{to}` was taken from `{from}`: {name} takes `{to}`)");
        return Some((fixed, format!("{name}: `{to}` taken from `{from}`"), Some(note)));
    }
    let (known, ignored) = schema::known_arguments(schema, input);
    if ignored.is_empty() {
        return None;
    }
    let names = ignored.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    let note = format!("(left out: {names}, which {name} does not take)");
    Some((known, format!("{name}: unknown arguments left out"), Some(note)))
}

impl Agent {
    /// Before the call runs: its arguments repaired against the offered tool's schema (an
    /// unknown tool is left to the lookup, which says so).
    pub(in crate::agent) fn argument_repair(&mut self, call: &mut Call) -> Verdict {
        let Some(i) = self.offered.iter().position(|t| t.name() == call.name) else { return Verdict::Go };
        let schema = self.tools[i].input_schema.clone();
        for _ in 0..MAX_REPAIRS {
            let Some((fixed, what, note)) = repair(&call.name, &schema, call.run_input()) else { break };
            self.fire(Guard::ArgumentRepair, &what);
            call.repaired.extend(note);
            call.run = Some(fixed);
        }
        Verdict::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn save_schema() -> Value {
        json!({"type": "object", "properties": {"filename": {"type": "string"}, "content": {"type": "string"}},
               "required": ["filename", "content"]})
    }

    #[test]
    fn guard_argument_repair_fires_on_a_file_name_under_another_name_and_an_unknown_key() {
        let input = json!({"name": "answer.txt", "content": "42", "mood": "sure"});
        let (fixed, _, note) = repair("save_file", &save_schema(), &input).unwrap();
        assert!(note.unwrap().contains("`filename` was taken from `name`"));
        let (fixed, _, note) = repair("save_file", &save_schema(), &fixed).unwrap();
        assert_eq!(fixed, json!({"filename": "answer.txt", "content": "42"}));
        assert_eq!(note.as_deref(), Some("(left out: `mood`, `name`, which save_file does not take)"));
        assert!(repair("save_file", &save_schema(), &fixed).is_none(), "then nothing is left to mend");
    }

    #[test]
    fn guard_argument_repair_is_quiet_on_a_well_formed_call() {
        let input = json!({"filename": "answer.txt", "content": "42"});
        assert!(repair("save_file", &save_schema(), &input).is_none());
    }
}

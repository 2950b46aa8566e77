//! `loose_actions` (small profile, before a call, a repair; JSON action mode only): a reply in
//! another shape than the one asked for — `tool_name`/`name` for `tool`, `arguments`/
//! `tool_input` for `args`, a nested `step`, `action` left out, a key written twice, the tool
//! named inside `args`, `args` as a JSON string, text around the object — is read as meant
//! (`llm::actions::read`). Off, only the asked shape is an action (`read_exact`), and anything
//! else gets JSON mode's one correction round. The reading is the model layer's; whether it may
//! read loosely is this unit's (`Request::loose_actions`), and each loose reading is its event.
//!
//! Invariant: a loose reading never invents a step: the tool must be offered and its `args` an
//! object, as for an exact one.

use super::super::Agent;
use super::{Modes, Unit};
use crate::llm::Reply;
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::LooseActions,
    modes: Modes::JSON,
    evidence: "moved from the JSON-mode reader, where it ran in every JSON-mode session. It fired in none of \
     the injection suite's 7 JSON-mode sessions (4e00e41); not yet ablated.",
};

impl Agent {
    /// Whether this turn's request lets JSON action mode read a reply loosely.
    pub(in crate::agent) fn loose_actions_asked(&self) -> bool {
        self.unit_on(&UNIT)
    }

    /// The reply as it came: one read loosely is this unit's event.
    pub(in crate::agent) fn loose_action_read(&mut self, reply: &mut Reply) {
        if reply.loose_action {
            self.fire(Guard::LooseActions, "a reply's action read in another shape than asked");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::llm::ToolDef;
    use crate::llm::actions::{Action, read, read_exact};
    use serde_json::json;

    #[test]
    fn guard_loose_actions_reads_other_shapes_only_where_asked() {
        let tools = [ToolDef { name: "browser_click", description: "", input_schema: json!({"type": "object"}) }];
        let asked = r#"{"action": "next_step", "tool": "browser_click", "args": {"selector": "ref=e2"}}"#;
        let call = Action::Tool { tool: "browser_click".into(), args: json!({"selector": "ref=e2"}) };
        assert_eq!(read_exact(asked, &tools, "args"), Ok(call.clone()));
        let aliased = r#"Sure: {"tool_name": "browser_click", "arguments": "{\"selector\": \"ref=e2\"}"}"#;
        assert!(read_exact(aliased, &tools, "args").is_err(), "not the asked shape");
        assert_eq!(read(aliased, &tools), Ok(call));
        assert!(read_exact(r#"{"action": "complete"}"#, &tools, "args").is_err(), "a complete says its message");
        // Where a reply schema holds the arguments as `tool_args`, that is the asked shape.
        let constrained = r#"{"action": "next_step", "tool": "browser_click", "tool_args": {"selector": "ref=e2"}}"#;
        assert_eq!(read_exact(constrained, &tools, "tool_args"), read_exact(asked, &tools, "args"));
    }
}

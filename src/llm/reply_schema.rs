//! The JSON Schema a JSON-action reply must follow where the endpoint enforces one: a top-level
//! `anyOf` with one branch per tool offered this turn (its `tool` a constant, its `tool_args`
//! the tool's schema as narrowed to the page) and one for `complete` (and `ask_user` where
//! someone answers). A step's short free `thinking` comes before its tool, so reasoning keeps
//! its room.
//!
//! Servers generate an object's keys in the order the schema lists them, and our JSON objects
//! list keys sorted; so the keys are named to sort in the order they should come: `action`
//! first in every branch (so the first choice is what to do, as the prompt always showed, and
//! a model that starts with `"action"` is not led into `complete`), then `thinking`, `tool`,
//! `tool_args` (`actions.rs` reads `tool_args` as `args`). `anyOf`, not `oneOf`: the branches
//! exclude each other by their constants anyway, and more servers take it (llguidance refuses
//! `oneOf`).
//!
//! Guarantees: the top object holds only `anyOf` (llama.cpp refuses `properties` beside it);
//! every branch and every `tool_args` object takes no other keys; nothing here reads the page or
//! the task: what a branch allows is what its `ToolDef` says.

use super::ToolDef;
use serde_json::{Map, Value, json};

/// How long each thought may be: room for a sentence or two, not for an essay.
const THOUGHT_CHARS: u64 = 300;
/// How long a `complete` message or an `ask_user` question may be.
const MESSAGE_CHARS: u64 = 2_000;

/// The schema for one reply choosing among `tools` (`ask_user` among them makes the question a
/// branch; `finish_task` or `finish_exploration` makes `complete` one).
pub fn for_actions(tools: &[ToolDef]) -> Value {
    let has = |name: &str| tools.iter().any(|t| t.name == name);
    let mut branches: Vec<Value> = tools.iter().map(step_branch).collect();
    if has("finish_task") || has("finish_exploration") {
        branches.push(branch("complete", &[("message", text(MESSAGE_CHARS))]));
    }
    if has("ask_user") {
        branches.push(branch("ask_user", &[("question", text(MESSAGE_CHARS))]));
    }
    json!({"anyOf": branches})
}

fn step_branch(tool: &ToolDef) -> Value {
    branch("next_step", &[("tool", json!({"const": tool.name})), ("tool_args", closed(&tool.input_schema))])
}

/// `{"action": <const>, …fields, "thinking": …}` in key order, every field required, no
/// other key.
fn branch(action: &str, fields: &[(&str, Value)]) -> Value {
    let mut properties = Map::new();
    properties.insert("thinking".into(), thinking());
    properties.insert("action".into(), json!({"const": action}));
    for (name, schema) in fields {
        properties.insert((*name).to_string(), schema.clone());
    }
    let required: Vec<&String> = properties.keys().collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn thinking() -> Value {
    let props = json!({"observation": text(THOUGHT_CHARS), "plan": text(THOUGHT_CHARS)});
    json!({"type": "object", "properties": props, "required": ["observation", "plan"], "additionalProperties": false})
}

fn text(max: u64) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// A tool's argument schema taking no key it does not name (a small model adds its own).
fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(obj) = schema.as_object_mut() {
        if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
            obj.insert("additionalProperties".into(), false.into());
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &'static str, schema: Value) -> ToolDef {
        ToolDef { name, description: "", input_schema: schema }
    }

    #[test]
    fn one_branch_per_tool_then_complete_and_only_one_of_at_the_top() {
        let click = json!({"type": "object", "properties": {"selector": {"enum": ["ref=e1", "ref=e2"]}},
            "required": ["selector"]});
        let tools = [tool("browser_click", click), tool("finish_task", json!({"type": "object"}))];
        let schema = for_actions(&tools);
        assert_eq!(schema.as_object().unwrap().keys().collect::<Vec<_>>(), ["anyOf"]);
        let branches = schema["anyOf"].as_array().unwrap();
        assert_eq!(branches.len(), 3, "two tools and complete: {schema}");
        let first = &branches[0];
        assert_eq!(first["properties"]["tool"], json!({"const": "browser_click"}));
        let args = &first["properties"]["tool_args"];
        assert_eq!(args["properties"]["selector"]["enum"], json!(["ref=e1", "ref=e2"]));
        assert_eq!(args["additionalProperties"], false);
        // As sent: what to do first (in every branch), the thought, the tool, its arguments.
        let sent = first["properties"].to_string();
        let at = |k: &str| sent.find(&format!("\"{k}\":")).unwrap();
        assert!(at("action") < at("thinking") && at("thinking") < at("tool") && at("tool") < at("tool_args"), "{sent}");
        assert_eq!(first["properties"]["action"], json!({"const": "next_step"}));
        for b in branches {
            assert!(b["properties"].to_string().starts_with("{\"action\":"), "{b}");
        }
        assert_eq!(branches[2]["properties"]["action"], json!({"const": "complete"}));
        assert!(!schema.to_string().contains("ask_user"), "nobody to ask: no branch for it");
    }
}

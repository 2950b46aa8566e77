//! One flat JSON action per reply, for models that cannot call tools themselves, and for tool
//! calls a model wrote as text.
//!
//! The shape the prompt asks for: `{"action": "next_step" | "complete" | "ask_user",
//! "thinking": {…}, "tool": "…", "args": {…}, "message": "…", "question": "…"}` — flat, no nested
//! step, no `oneOf`. Parsing is deterministic and never invents a step: strip a markdown fence
//! or `<tool_call>` tags, take the first JSON object, hoist a nested `step`/`next_step` object,
//! map the usual aliases (`tool_name`/`name` → `tool`; `tool_args`/`arguments`/`tool_input` →
//! `args`; `response`/`content` → `message`; `action: "respond"` → `complete`), infer the action
//! from the fields present when it is missing, then check the tool is offered and its `args` an
//! object (the session checks them against the tool's schema). Anything else is an error that
//! says exactly what is wrong (an `Unusable`). A key written twice with two objects (`args`)
//! keeps both; a tool named inside `args` (another offered tool) is the call meant.

use super::ToolDef;
use serde_json::{Map, Value};
use std::fmt;

/// What a reply asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Tool { tool: String, args: Value },
    Complete { message: String },
    AskUser { question: String },
}

/// Why a reply is no action this session can take; the model is told in these words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unusable {
    /// No JSON object could be found in the reply.
    NotAnObject,
    /// No `action`, and no field that tells which one.
    NoAction,
    /// `next_step` without a `tool`.
    NoTool,
    /// `ask_user` without a `question`.
    NoQuestion,
    /// `complete` without a `message` (read exactly).
    NoMessage,
    /// An action other than next_step, complete or ask_user (as given).
    UnknownAction(String),
    /// A tool the session does not offer (the tool, the offered ones).
    UnknownTool { tool: String, offered: Vec<&'static str> },
    /// `args` that are not an object (the tool).
    ArgsNotObject(String),
    /// `complete` in a session without a finishing tool (JSON mode).
    CannotComplete,
    /// `ask_user` in a session where nobody can be asked (JSON mode).
    NobodyToAsk,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unusable::NotAnObject => f.write_str("the reply is not a JSON object"),
            Unusable::NoAction => f.write_str("no `action`, and no `tool`, `question` or `message` to tell which one"),
            Unusable::NoTool => f.write_str("`next_step` needs a `tool` (to finish, use `complete` with a `message`)"),
            Unusable::NoQuestion => f.write_str("`ask_user` needs a non-empty `question`"),
            Unusable::NoMessage => f.write_str("`complete` needs a non-empty `message`"),
            Unusable::UnknownAction(other) => {
                write!(f, "unknown action {other:?}; use next_step, complete or ask_user")
            }
            Unusable::UnknownTool { tool, offered } => {
                write!(f, "unknown tool {tool:?}; the tools are: {}", offered.join(", "))
            }
            Unusable::ArgsNotObject(tool) => write!(f, "`args` for {tool} must be a JSON object"),
            Unusable::CannotComplete => f.write_str("`complete` is not possible in this session"),
            Unusable::NobodyToAsk => f.write_str(
                "nobody can be asked in this session: decide yourself, or `complete` with a message that says what \
                 you need",
            ),
        }
    }
}

impl std::error::Error for Unusable {}

/// The JSON object a reply holds: the whole text, a fenced block, a `<tool_call>` element, or
/// the first balanced `{…}` in the text.
pub fn extract_object(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    let candidates =
        [Some(trimmed), between(trimmed, "<tool_call>", "</tool_call>"), fenced(trimmed), first_object(trimmed)];
    candidates.into_iter().flatten().find_map(|c| serde_json::from_str::<Merged>(c.trim()).ok().map(|m| m.0))
}

/// A JSON object whose repeated object-valued keys are merged, not replaced: small models write
/// `{"args": {"selector": "ref=e4"}, "tool": "…", "args": {"filename": "t.csv"}}` and mean both.
struct Merged(Value);

impl<'de> serde::Deserialize<'de> for Merged {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Merged;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Merged, A::Error> {
                let mut map = Map::new();
                while let Some((key, value)) = access.next_entry::<String, Value>()? {
                    match (map.get_mut(&key), value) {
                        (Some(Value::Object(had)), Value::Object(more)) => had.extend(more),
                        (_, value) => {
                            map.insert(key, value);
                        }
                    }
                }
                Ok(Merged(Value::Object(map)))
            }
        }
        d.deserialize_map(Visit)
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close).map_or(text.len(), |e| start + e);
    Some(&text[start..end])
}

/// The body of the first ``` fence (with or without a language tag).
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")? + 3;
    let body_start = start + text[start..].find('\n')? + 1;
    let end = text[body_start..].find("```").map_or(text.len(), |e| body_start + e);
    Some(&text[body_start..end])
}

/// The first `{…}` whose braces balance (strings and escapes respected).
fn first_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Aliases and nesting mapped onto the flat shape.
pub fn normalize(value: &Value) -> Value {
    let Value::Object(map) = value else { return value.clone() };
    let mut out = map.clone();
    if let Some(Value::Object(step)) = out.remove("step").or_else(|| out.remove("next_step")) {
        for (key, val) in step {
            out.entry(key).or_insert(val);
        }
    }
    rename_first(&mut out, "tool", &["tool_name", "name"]);
    rename_first(&mut out, "args", &["tool_args", "arguments", "tool_input", "parameters"]);
    rename_first(&mut out, "message", &["response", "content"]);
    // Arguments written as a JSON string, as OpenAI sends them.
    if let Some(Value::String(s)) = out.get("args") {
        if let Ok(parsed) = serde_json::from_str::<Value>(s) {
            out.insert("args".into(), parsed);
        }
    }
    Value::Object(out)
}

fn rename_first(map: &mut Map<String, Value>, key: &str, aliases: &[&str]) {
    for alias in aliases {
        if map.get(key).is_none_or(Value::is_null) {
            if let Some(v) = map.remove(*alias) {
                map.insert(key.to_string(), v);
            }
        }
    }
}

fn text_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A reply in exactly the shape the prompt asks for: the whole text, or one fenced block, a
/// JSON object with an `action` and that action's own fields, a step's arguments under
/// `args_key` (`args`, or `tool_args` where a reply schema holds them). Other shapes are read by
/// `read`, only where the small profile's `loose_actions` unit is on.
pub fn read_exact(text: &str, tools: &[ToolDef], args_key: &str) -> Result<Action, Unusable> {
    let trimmed = text.trim();
    let object = [Some(trimmed), fenced(trimmed)]
        .into_iter()
        .flatten()
        .find_map(|c| serde_json::from_str::<Value>(c.trim()).ok().filter(Value::is_object));
    let Some(Value::Object(map)) = object else { return Err(Unusable::NotAnObject) };
    match map.get("action").and_then(Value::as_str) {
        Some("next_step") => {
            let tool = text_field(&map, "tool").ok_or(Unusable::NoTool)?;
            let args = map.get(args_key).cloned().unwrap_or_else(|| Value::Object(Map::new()));
            check_call(&tool, &args, tools)?;
            Ok(Action::Tool { tool, args })
        }
        Some("complete") => Ok(Action::Complete { message: text_field(&map, "message").ok_or(Unusable::NoMessage)? }),
        Some("ask_user") => Ok(Action::AskUser { question: text_field(&map, "question").ok_or(Unusable::NoQuestion)? }),
        Some(other) => Err(Unusable::UnknownAction(other.to_string())),
        None => Err(Unusable::NoAction),
    }
}

/// Parse a reply into an action the session can take, or say precisely why not.
pub fn parse(text: &str, tools: &[ToolDef]) -> Result<Action, Unusable> {
    read(text, tools)
}

/// Parse a reply into an action the session can take, or why not.
pub fn read(text: &str, tools: &[ToolDef]) -> Result<Action, Unusable> {
    let object = extract_object(text).ok_or(Unusable::NotAnObject)?;
    let normalized = normalize(&object);
    let Value::Object(map) = &normalized else { return Err(Unusable::NotAnObject) };
    let has = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
    let action = match map.get("action").and_then(Value::as_str) {
        // `complete` with a call written out and no message: the call is what the reply says
        // (the model took `complete` for "this completes the step"); ending would lose it.
        Some("complete") if has("tool") && has("args") && !has("message") => "next_step".into(),
        Some(a) => a.to_string(),
        None if has("tool") => "next_step".into(),
        None if has("question") => "ask_user".into(),
        None if has("message") => "complete".into(),
        None => return Err(Unusable::NoAction),
    };
    match action.as_str() {
        "next_step" => {
            let tool = text_field(map, "tool").ok_or(Unusable::NoTool)?;
            let args = map.get("args").cloned().filter(|a| !a.is_null()).unwrap_or_else(|| Value::Object(Map::new()));
            let (tool, args) = inner_call(tool, args, tools);
            check_call(&tool, &args, tools)?;
            Ok(Action::Tool { tool, args })
        }
        // A small model's `complete` may carry its words in `thinking` only: ending on that beats
        // ending the session on a missing field.
        "complete" | "respond" => Ok(Action::Complete {
            message: text_field(map, "message")
                .or_else(|| map.get("thinking").and_then(Value::as_object).and_then(|t| text_field(t, "observation")))
                .unwrap_or_else(|| "Done.".to_string()),
        }),
        "ask_user" => Ok(Action::AskUser { question: text_field(map, "question").ok_or(Unusable::NoQuestion)? }),
        other => Err(Unusable::UnknownAction(other.to_string())),
    }
}

/// A call written inside another's arguments (`"tool": "browser_snapshot", "args": {"tool":
/// "browser_type", "selector": …}`), as a small model does once it has seen it merged: the inner
/// tool is the one meant, unless the outer one takes a `tool` argument itself.
fn inner_call(tool: String, mut args: Value, tools: &[ToolDef]) -> (String, Value) {
    let Some(inner) = args.get("tool").and_then(Value::as_str).map(str::to_string) else { return (tool, args) };
    let takes_tool =
        |name: &str| tools.iter().any(|t| t.name == name && t.input_schema["properties"].get("tool").is_some());
    if inner == tool || takes_tool(&tool) || !tools.iter().any(|t| t.name == inner) {
        return (tool, args);
    }
    if let Some(map) = args.as_object_mut() {
        map.remove("tool");
    }
    (inner, args)
}

/// The tool is offered and its arguments are an object. What the arguments hold is the
/// session's to check (its schema check answers a bad one as the tool's error): a reply
/// refused here costs a hidden second call, and two end the session.
fn check_call(tool: &str, args: &Value, tools: &[ToolDef]) -> Result<(), Unusable> {
    if !tools.iter().any(|t| t.name == tool) {
        let offered = tools.iter().map(|t| t.name).collect();
        return Err(Unusable::UnknownTool { tool: tool.to_string(), offered });
    }
    if args.is_object() { Ok(()) } else { Err(Unusable::ArgsNotObject(tool.to_string())) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolDef> {
        vec![ToolDef {
            name: "browser_navigate",
            description: "",
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
        }]
    }

    fn nav() -> Action {
        Action::Tool { tool: "browser_navigate".into(), args: json!({"url": "https://a.test/"}) }
    }

    #[test]
    fn fences_tags_nesting_and_aliases_all_parse() {
        let t = tools();
        let replies = [
            r#"{"action":"next_step","thinking":{"why":"start"},"tool":"browser_navigate","args":{"url":"https://a.test/"}}"#,
            "Sure:\n```json\n{\"action\": \"next_step\", \"tool\": \"browser_navigate\", \"args\": {\"url\": \"https://a.test/\"}}\n```",
            r#"<tool_call>{"name": "browser_navigate", "arguments": {"url": "https://a.test/"}}</tool_call>"#,
            r#"{"action":"next_step","step":{"tool_name":"browser_navigate","tool_args":{"url":"https://a.test/"}}}"#,
            r#"{"next_step":{"tool":"browser_navigate","tool_input":{"url":"https://a.test/"}}}"#,
            r#"I will open it. {"tool":"browser_navigate","arguments":"{\"url\":\"https://a.test/\"}"} then look."#,
            r#"{"action":"next_step","args":{},"tool":"browser_navigate","args":{"url":"https://a.test/"}}"#,
        ];
        for r in replies {
            assert_eq!(parse(r, &t), Ok(nav()), "{r}");
        }
        let done = Action::Complete { message: "all done".into() };
        assert_eq!(parse(r#"{"action":"complete","message":"all done"}"#, &t), Ok(done.clone()));
        assert_eq!(parse(r#"{"action":"respond","response":"all done"}"#, &t), Ok(done.clone()));
        assert_eq!(parse(r#"{"content":"all done"}"#, &t), Ok(done));
        assert_eq!(parse(r#"{"question":"which?"}"#, &t), Ok(Action::AskUser { question: "which?".into() }));
        let twice = r#"{"args":{"url":"https://a.test/"},"tool":"browser_navigate","args":{"wait":"load"}}"#;
        let both =
            Action::Tool { tool: "browser_navigate".into(), args: json!({"url": "https://a.test/", "wait": "load"}) };
        assert_eq!(parse(twice, &t), Ok(both), "an object key written twice keeps both objects");
    }

    #[test]
    fn a_call_inside_another_calls_arguments_is_the_one_meant() {
        let mut t = tools();
        t.push(ToolDef { name: "browser_snapshot", description: "", input_schema: json!({"type": "object"}) });
        let wrapped = r#"{"action":"next_step","args":{"page":2,"tool":"browser_navigate","url":"https://a.test/"},"tool":"browser_snapshot"}"#;
        let meant =
            Action::Tool { tool: "browser_navigate".into(), args: json!({"page": 2, "url": "https://a.test/"}) };
        assert_eq!(parse(wrapped, &t), Ok(meant));
        let unknown = r#"{"tool":"browser_snapshot","args":{"tool":"teleport"}}"#;
        let kept = Action::Tool { tool: "browser_snapshot".into(), args: json!({"tool": "teleport"}) };
        assert_eq!(parse(unknown, &t), Ok(kept), "an inner name that is no tool is left to the schema check");
    }

    #[test]
    fn a_reply_nested_100_000_deep_is_no_action() {
        // serde_json's recursion limit (128, never disabled here) holds on a session's stack.
        let deep = format!("{}{}", "{\"a\":[".repeat(100_000), "]}".repeat(100_000));
        let parsed = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(move || (extract_object(&deep).is_none(), parse(&deep, &tools()).is_err()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(parsed, (true, true));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let t = tools();
        assert!(parse("I think I should browse.", &t).unwrap_err().to_string().contains("not a JSON object"));
        assert!(
            parse(r#"{"action":"next_step","tool":"teleport","args":{}}"#, &t)
                .unwrap_err()
                .to_string()
                .contains("unknown tool")
        );
        let bare = Action::Tool { tool: "browser_navigate".into(), args: json!({}) };
        assert_eq!(
            parse(r#"{"action":"next_step","tool":"browser_navigate"}"#, &t),
            Ok(bare),
            "the session checks args"
        );
        assert!(
            parse(r#"{"tool":"browser_navigate","args":"x"}"#, &t)
                .unwrap_err()
                .to_string()
                .contains("must be a JSON object")
        );
        assert!(
            parse(r#"{"action":"next_step","message":"hi"}"#, &t).unwrap_err().to_string().contains("needs a `tool`")
        );
        assert!(parse(r#"{"action":"dance"}"#, &t).unwrap_err().to_string().contains("unknown action"));
        assert!(parse(r#"{"thinking":{}}"#, &t).unwrap_err().to_string().contains("no `action`"));
        assert!(
            matches!(parse(r#"{"action":"complete","message":"  "}"#, &t), Ok(Action::Complete { message }) if message == "Done.")
        );
        let call = r#"{"action":"complete","thinking":{"plan":"Click Nola."},"tool":"browser_navigate","args":{"url":"https://a.test/"}}"#;
        assert_eq!(
            parse(call, &t),
            Ok(Action::Tool { tool: "browser_navigate".into(), args: json!({"url": "https://a.test/"}) }),
            "a call written out is made"
        );
        let said_and_called = r#"{"action":"complete","message":"Opened it.","tool":"browser_navigate","args":{}}"#;
        assert!(matches!(parse(said_and_called, &t), Ok(Action::Complete { .. })), "a message ends it");
        let said = r#"{"action":"complete","thinking":{"observation":"It is Lyon."}}"#;
        assert!(matches!(parse(said, &t), Ok(Action::Complete { message }) if message == "It is Lyon."));
    }
}

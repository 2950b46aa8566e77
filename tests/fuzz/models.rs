//! What models send back: the three wire formats' replies, their usage figures (capped per
//! call) and error bodies (bounded) (`llm::openai`,
//! `llm::anthropic`, `llm::gemini`, the transport's retry headers), JSON-mode actions
//! (`llm::actions`), the schema check every tool call passes (`util::schema`), and the
//! `tool_outputs_*` tools' arguments (JSONPath, line ranges) over stored outputs.

use super::*;
use agent_controller::agent::outputs::answer;
use agent_controller::llm::actions::{self, Action};
use agent_controller::llm::{Block, Message, Reply, Request, StopReason, ToolDef, anthropic, gemini, openai};
use agent_controller::protocol::tools::Tool;
use agent_controller::util::schema;
use std::time::Duration;

fn tool_defs() -> Vec<ToolDef> {
    Tool::ALL
        .iter()
        .map(|t| {
            let spec = t.spec();
            ToolDef { name: t.name(), description: spec.description, input_schema: spec.input_schema.to_value() }
        })
        .collect()
}

const REPLY_KEYS: &[&str] = &[
    "choices",
    "message",
    "content",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "id",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "type",
    "text",
    "input",
    "stop_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "candidates",
    "parts",
    "functionCall",
    "args",
    "thought",
    "thoughtSignature",
    "finishReason",
    "usageMetadata",
    "promptTokenCount",
    "promptFeedback",
    "blockReason",
    "error",
    "details",
    "retryDelay",
    "status",
    "url",
    "action",
    "tool",
];
const REPLY_WORDS: &[&str] = &[
    "tool_use",
    "text",
    "end_turn",
    "max_tokens",
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "STOP",
    "SAFETY",
    "browser_navigate",
    "run_command",
    "finish_task",
    "https://a.test/",
    "{\"url\":\"https://a.test/\"}",
    "",
    "x",
    "call_1",
    "17s",
    "0.5s",
    "-3s",
    "NaNs",
    "1e308s",
    "model",
    "assistant",
];

fn reply_examples() -> Vec<Value> {
    vec![
        json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "call_1", "function": {"name": "browser_navigate", "arguments": "{\"url\":\"https://a.test/\"}"}},
            {"function": {"name": "run_command", "arguments": {"command": "ls"}}}]}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 20}}}),
        json!({"choices": [{"message": {"content": [{"type": "text", "text": "```json\n{\"tool\": \"browser_navigate\", \"args\": {\"url\": \"https://a.test/\"}}\n```"}]}}]}),
        json!({"content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "toolu_1", "name": "run_command",
            "input": {"command": "ls"}}, {"type": "thinking"}], "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 1}}),
        json!({"candidates": [{"content": {"parts": [{"text": "x", "thought": true}, {"text": "ok"},
            {"functionCall": {"name": "browser_navigate", "args": {"url": "https://a.test/"}}, "thoughtSignature": "c2ln"}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3, "cachedContentTokenCount": 9}}),
        json!({"promptFeedback": {"blockReason": "SAFETY"}}),
        json!({"content": [], "usage": {"input_tokens": u64::MAX, "output_tokens": u64::MAX,
            "cache_read_input_tokens": u64::MAX, "cache_creation_input_tokens": u64::MAX},
            "choices": [{"message": {"content": "x"}}], "usageMetadata": {"promptTokenCount": u64::MAX,
            "candidatesTokenCount": u64::MAX, "thoughtsTokenCount": u64::MAX}}),
        json!({"error": {"message": "slow down", "type": "rate_limit_error", "status": "RESOURCE_EXHAUSTED",
            "details": [{"retryDelay": "17s"}]}}),
    ]
}

/// The common promises of a parsed reply: calls have names' ids, no empty text, the stop
/// reason says whether there are calls, and no usage figure passes the per-call cap.
fn check_reply(reply: &Reply, ids_unique: bool) -> Result<(), TestCaseError> {
    let u = reply.usage;
    for n in [u.input, u.output, u.cache_read, u.cache_write] {
        prop_assert!(n <= agent_controller::llm::MAX_CALL_TOKENS, "{u:?}");
    }
    let mut ids = std::collections::HashSet::new();
    for b in &reply.content {
        match b {
            Block::Text { text } => prop_assert!(!text.is_empty()),
            Block::ToolUse { id, .. } if ids_unique => prop_assert!(!id.is_empty() && ids.insert(id.clone()), "{id:?}"),
            _ => {}
        }
    }
    Ok(())
}

fn has_calls(r: &Reply) -> bool {
    r.content.iter().any(|b| matches!(b, Block::ToolUse { .. }))
}

#[test]
fn fuzz_model_replies() {
    let tools = tool_defs();
    let messages = [Message::user(vec![Block::text("go")])];
    let request = Request {
        system: "s",
        tools: &tools,
        unlisted: &[],
        require_tool: false,
        json_reply: agent_controller::llm::JsonReply::Free,
        narrowed: None,
        messages: &messages,
        max_tokens: 100,
        loose_actions: true,
        correct_once: true,
    };
    let input = json_body(REPLY_KEYS, REPLY_WORDS, &reply_examples());
    fuzz("model replies (openai, anthropic and gemini parse_reply)", input, |body| {
        let body = String::from_utf8_lossy(&body);
        if let Ok(r) = openai::parse_reply(&body, &request) {
            check_reply(&r, true)?;
            prop_assert_eq!(has_calls(&r), r.stop_reason == StopReason::ToolUse);
        }
        if let Ok(r) = anthropic::parse_reply(&body) {
            check_reply(&r, false)?;
        }
        if let Ok(r) = gemini::parse_reply(&body, 1) {
            check_reply(&r, false)?;
            prop_assert_eq!(has_calls(&r), r.stop_reason == StopReason::ToolUse);
        }
        Ok(())
    });
}

#[test]
fn fuzz_model_error_bodies() {
    let input = (json_body(REPLY_KEYS, REPLY_WORDS, &reply_examples()), 100u16..600, text(), text());
    fuzz("model error bodies and retry hints (api_message, retry delays)", input, |(body, status, ms, secs)| {
        let body = String::from_utf8_lossy(&body);
        for m in [
            openai::api_message(status, &body),
            anthropic::api_message(status, &body),
            gemini::api_message(status, &body),
        ] {
            prop_assert!(m.contains(&status.to_string()), "{m}");
            let kept = agent_controller::llm::bounded_message(&m);
            prop_assert!(kept.chars().count() <= agent_controller::llm::MAX_ERROR_CHARS + 60, "{kept}");
        }
        let sane = |d: Option<Duration>| d.is_none_or(|d| d > Duration::ZERO && d <= Duration::from_secs(60));
        prop_assert!(sane(gemini::retry_delay(status, &body)));
        for headers in [vec![("retry-after-ms".to_string(), ms)], vec![("retry-after".to_string(), secs)]] {
            prop_assert!(sane(agent_controller::llm::transport::retry_after(&headers)));
        }
        Ok(())
    });
}

const ACTION_KEYS: &[&str] = &[
    "action",
    "thinking",
    "tool",
    "tool_name",
    "name",
    "args",
    "tool_args",
    "arguments",
    "tool_input",
    "parameters",
    "message",
    "response",
    "content",
    "question",
    "step",
    "next_step",
    "url",
    "command",
    "selector",
    "summary",
    "text",
    "path",
];
const ACTION_WORDS: &[&str] = &[
    "next_step",
    "complete",
    "ask_user",
    "respond",
    "browser_navigate",
    "run_command",
    "browser_click",
    "finish_task",
    "https://a.test/",
    "ls -la",
    "#go",
    "done",
    "{\"url\": \"https://a.test/\"}",
    "",
];

fn action_texts() -> impl Strategy<Value = String> {
    let examples = [
        r#"{"action":"next_step","thinking":{"why":"start"},"tool":"browser_navigate","args":{"url":"https://a.test/"}}"#,
        "Sure:\n```json\n{\"action\": \"next_step\", \"tool\": \"run_command\", \"args\": {\"command\": \"ls\"}}\n```",
        r#"<tool_call>{"name": "browser_navigate", "arguments": {"url": "https://a.test/"}}</tool_call>"#,
        r##"{"next_step":{"tool_name":"browser_click","tool_args":"{\"selector\":\"#go\"}"}}"##,
        r#"I will open it. {"tool":"browser_navigate","arguments":"{\"url\":\"https://a.test/\"}"} then look."#,
        r#"{"action":"respond","response":"all done"} {"question":"which?"}"#,
    ];
    let wrapped = (json_like(ACTION_KEYS, ACTION_WORDS), 0..4usize, text()).prop_map(|(v, how, prose)| match how {
        0 => v.to_string(),
        1 => format!("{prose}\n```json\n{v}\n```"),
        2 => format!("<tool_call>{v}</tool_call>{prose}"),
        _ => format!("{prose} {v} {prose}"),
    });
    prop_oneof![3 => text_input(&examples), 3 => wrapped]
}

#[test]
fn fuzz_json_mode_actions() {
    let tools = tool_defs();
    fuzz("JSON-mode actions (llm::actions::parse, util::schema::validate)", action_texts(), |text| {
        match actions::parse(&text, &tools) {
            Ok(Action::Tool { tool, args }) => {
                let def = tools.iter().find(|t| t.name == tool);
                prop_assert!(def.is_some(), "{tool} is not offered");
                prop_assert!(args.is_object());
                // What dispatch does next with the call: check it against the tool's schema.
                let _ = schema::validate(&def.unwrap().input_schema, &args);
            }
            Ok(Action::Complete { message }) => prop_assert!(!message.trim().is_empty()),
            Ok(Action::AskUser { question }) => prop_assert!(!question.trim().is_empty()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        Ok(())
    });
}

#[test]
fn fuzz_tool_call_arguments() {
    let tools = tool_defs();
    let args = (0..tools.len(), json_object(ACTION_KEYS, ACTION_WORDS));
    fuzz("tool call arguments against every tool's schema (util::schema::validate)", args, |(i, args)| {
        if let Err(e) = schema::validate(&tools[i].input_schema, &args) {
            prop_assert!(e.to_string().contains('`'), "names what is wrong: {e}");
        }
        Ok(())
    });
}

const STORED: &[&str] = &[
    r#"{"items": [{"name": "a", "price": 1}, {"name": "b", "price": 2.5, "tags": ["x", "y"]}], "next": null}"#,
    "[1, 2, 3, {\"deep\": [[[]]]}, \"four\"]",
    "line one\nline two has a needle\n\nline four\r\nlast",
    "",
];
const PATHS: &[&str] =
    &["$", "$.items[*].name", "$..price", "$.items[?@.price > 1]", "$[-1:]", "$[::-2]", "$..*", "$.a.b.c", "$[0"];

#[test]
fn fuzz_tool_outputs_arguments() {
    let tool = prop::sample::select(vec![
        Tool::ToolOutputsStats,
        Tool::ToolOutputsExtract,
        Tool::ToolOutputsCount,
        Tool::ToolOutputsSample,
    ]);
    let path = prop_oneof![text_input(PATHS), text()];
    let lines = prop_oneof![Just("1-2".to_string()), Just("3".to_string()), text_input(&["10-20", "0-0", "5-1"])];
    let input = (prop::option::of(path), prop::option::of(lines), prop::option::of(text()), prop::option::of(any::<i64>()))
        .prop_map(|(path, lines, contains, n)| json!({"id": "out_001_x", "path": path, "lines": lines, "contains": contains, "n": n}));
    let stored = prop_oneof![text_input(STORED), json_like(ACTION_KEYS, ACTION_WORDS).prop_map(|v| v.to_string())];
    let max = prop_oneof![Just(20_000usize), 1usize..200];
    fuzz(
        "tool_outputs_* arguments (agent::outputs::answer: JSONPath, lines)",
        (tool, stored, input, max),
        |(tool, text, input, max)| {
            match answer(tool, &text, &input, max) {
                Ok(v) => prop_assert!(v.is_object()),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            Ok(())
        },
    );
}

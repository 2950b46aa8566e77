//! The tool catalog: every tool the model may call, its JSON schema, its timeout on the worker,
//! and the six mode × type sets of DESIGN §6. Which tools run in the controller is decided by
//! `agent::Agent::dispatch` (the local ones are handled there; the rest go to the worker).
//!
//! A call outside the session's set, or with arguments that do not fit the schema, is
//! answered to the model as a tool error by the agent loop; it never ends the session.

use crate::config::Config;
use crate::llm::ToolDef;
use crate::protocol::{Mode, SessionType};
use serde_json::{Value, json};
use std::time::Duration;

const BROWSER_CORE: [&str; 15] = [
    "browser_navigate",
    "browser_screenshot",
    "browser_get_dom",
    "browser_get_text",
    "browser_click",
    "browser_type",
    "browser_press_key",
    "browser_scroll",
    "browser_hover",
    "browser_select_option",
    "browser_wait_for",
    "browser_back",
    "browser_forward",
    "browser_get_page_info",
    "browser_switch_tab",
];

const BROWSER_TASK: [&str; 8] = [
    "browser_download",
    "browser_download_batch",
    "browser_scrape_links",
    "browser_scrape_table",
    "browser_scrape_text",
    "browser_fill_form",
    "browser_submit_form",
    "browser_save_as_pdf",
];

const APP_CORE: [&str; 11] = [
    "screenshot",
    "get_ui_tree",
    "list_elements",
    "click",
    "right_click",
    "double_click",
    "type_text",
    "press_key",
    "scroll",
    "switch_window",
    "get_window_info",
];

const SHELL_CORE: [&str; 4] = ["run_command", "read_file", "list_dir", "search_history"];

const TASK_LOCAL: [&str; 4] = ["request_confirmation", "save_file", "send_notification", "finish_task"];

/// The names offered to a session, in a stable order.
pub fn tool_names(mode: Mode, kind: SessionType, has_credentials: bool) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    match kind {
        SessionType::Browser => {
            names.extend(BROWSER_CORE);
            if has_credentials {
                names.push("perform_login");
            }
        }
        SessionType::App => names.extend(APP_CORE),
        SessionType::Shell => {
            names.extend(SHELL_CORE);
            if mode == Mode::Task {
                names.push("write_file");
            }
        }
    }
    names.push("save_note");
    match mode {
        Mode::Explore => names.push("finish_exploration"),
        Mode::Task => {
            if kind == SessionType::Browser {
                names.extend(BROWSER_TASK);
            }
            names.extend(TASK_LOCAL);
        }
    }
    names
}

pub fn toolset(mode: Mode, kind: SessionType, has_credentials: bool) -> Vec<ToolDef> {
    tool_names(mode, kind, has_credentials).into_iter().filter_map(definition).collect()
}

/// The longest `timeout_s` a tool call may ask for; the worker clamps to the same (shell) or
/// less (`browser_wait_for`: 600 s).
const MAX_ASKED_TIMEOUT_S: u64 = 3600;

/// How long a worker tool may take.
pub fn timeout_for(name: &str, input: &Value, config: &Config) -> Duration {
    let command = Duration::from_secs(config.task.command_timeout_s);
    match name {
        "browser_download" | "browser_download_batch" | "browser_save_as_pdf" => {
            Duration::from_secs(config.task.download_timeout_s)
        }
        "run_command" | "browser_wait_for" => {
            // Capped: the model picks this number, and a day-long wait would also hide a dead
            // worker (its allowance grows with the command's timeout).
            let asked = input["timeout_s"].as_u64().unwrap_or(0).min(MAX_ASKED_TIMEOUT_S);
            command.max(Duration::from_secs(asked + 15))
        }
        _ => command,
    }
}

fn obj(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn selector_only(desc: &'static str) -> Value {
    obj(json!({"selector": {"type": "string", "description": desc}}), &["selector"])
}

const SELECTOR_HELP: &str = "CSS selector, `text=Visible text`, or `tag:has-text(\"text\")`";

/// The definition of one tool, `None` for an unknown name.
pub fn definition(name: &str) -> Option<ToolDef> {
    let (name, description, input_schema): (&'static str, &'static str, Value) = match name {
        // ----- browser, observe -----
        "browser_navigate" => (
            "browser_navigate",
            "Open a URL in the current tab and wait for it to load.",
            obj(json!({"url": {"type": "string", "description": "Absolute http(s) URL"}}), &["url"]),
        ),
        "browser_screenshot" => (
            "browser_screenshot",
            "Take a screenshot of the current page (viewport, or the whole page).",
            obj(json!({"full_page": {"type": "boolean"}}), &[]),
        ),
        "browser_get_dom" => (
            "browser_get_dom",
            "A compact outline of the page: headings, links, buttons, form fields and tables, each with a selector that works. Read this before acting.",
            obj(json!({"selector": {"type": "string", "description": "Only the part under this element"}}), &[]),
        ),
        "browser_get_text" => (
            "browser_get_text",
            "The visible text of the page or of one element.",
            obj(json!({"selector": {"type": "string"}}), &[]),
        ),
        "browser_click" => ("browser_click", "Click an element.", selector_only(SELECTOR_HELP)),
        "browser_type" => (
            "browser_type",
            "Type text into an input field (clears it first unless clear is false).",
            obj(
                json!({"selector": {"type": "string", "description": SELECTOR_HELP}, "text": {"type": "string"},
                       "clear": {"type": "boolean"}, "press_enter": {"type": "boolean"}}),
                &["selector", "text"],
            ),
        ),
        "browser_press_key" => (
            "browser_press_key",
            "Press a key or combination, e.g. Enter, Escape, Tab, Control+A.",
            obj(json!({"key": {"type": "string"}}), &["key"]),
        ),
        "browser_scroll" => (
            "browser_scroll",
            "Scroll the page or an element.",
            obj(
                json!({"direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
                       "amount": {"type": "integer", "description": "Pixels (default: one screen)"},
                       "selector": {"type": "string", "description": "Scroll this element into view instead"}}),
                &[],
            ),
        ),
        "browser_hover" => ("browser_hover", "Move the mouse over an element.", selector_only(SELECTOR_HELP)),
        "browser_select_option" => (
            "browser_select_option",
            "Choose an option of a <select> by value or visible label.",
            obj(json!({"selector": {"type": "string"}, "value": {"type": "string"}}), &["selector", "value"]),
        ),
        "browser_wait_for" => (
            "browser_wait_for",
            "Wait until an element or a text appears.",
            obj(
                json!({"selector": {"type": "string"}, "text": {"type": "string"},
                       "timeout_s": {"type": "integer", "description": "Default 30"}}),
                &[],
            ),
        ),
        "browser_back" => ("browser_back", "Go back in history.", obj(json!({}), &[])),
        "browser_forward" => ("browser_forward", "Go forward in history.", obj(json!({}), &[])),
        "browser_get_page_info" => (
            "browser_get_page_info",
            "URL, title, open tabs and scroll position of the current page.",
            obj(json!({}), &[]),
        ),
        "browser_switch_tab" => (
            "browser_switch_tab",
            "Switch to another open tab by index or by part of its URL.",
            obj(json!({"index": {"type": "integer"}, "url_contains": {"type": "string"}}), &[]),
        ),
        // ----- browser, act -----
        "browser_download" => (
            "browser_download",
            "Download one file with the page's cookies; it is stored in the session's files.",
            obj(json!({"url": {"type": "string"}, "filename": {"type": "string"}}), &["url"]),
        ),
        "browser_download_batch" => (
            "browser_download_batch",
            "Download several files; each is stored in the session's files. Ask request_confirmation first.",
            obj(
                json!({"urls": {"type": "array", "items": obj(json!({"url": {"type": "string"}, "filename": {"type": "string"}}), &["url"])}}),
                &["urls"],
            ),
        ),
        "browser_scrape_links" => (
            "browser_scrape_links",
            "List links (text and absolute URL), optionally under a selector and matching a regex.",
            obj(
                json!({"selector": {"type": "string"}, "pattern": {"type": "string", "description": "Regular expression on the URL"},
                       "attribute": {"type": "string", "description": "Attribute to read (default href)"}}),
                &[],
            ),
        ),
        "browser_scrape_table" => (
            "browser_scrape_table",
            "Read an HTML table as rows (csv or json).",
            obj(
                json!({"selector": {"type": "string"}, "format": {"type": "string", "enum": ["csv", "json"]}}),
                &["selector"],
            ),
        ),
        "browser_scrape_text" => (
            "browser_scrape_text",
            "Read the text of several elements at once, by name.",
            obj(
                json!({"selectors": {"type": "array", "items": obj(json!({"name": {"type": "string"}, "selector": {"type": "string"}}), &["name", "selector"])}}),
                &["selectors"],
            ),
        ),
        "browser_fill_form" => (
            "browser_fill_form",
            "Fill several form fields (text, select, checkbox, radio).",
            obj(
                json!({"fields": {"type": "array", "items": obj(json!({"selector": {"type": "string"}, "value": {"type": "string"},
                       "type": {"type": "string", "enum": ["text", "select", "checkbox", "radio"]}}), &["selector", "value"])}}),
                &["fields"],
            ),
        ),
        "browser_submit_form" => (
            "browser_submit_form",
            "Submit a form (by its selector or by clicking its submit button). Ask request_confirmation first.",
            obj(json!({"selector": {"type": "string"}, "submit_selector": {"type": "string"}}), &[]),
        ),
        "browser_save_as_pdf" => (
            "browser_save_as_pdf",
            "Print the current page to a PDF stored in the session's files.",
            obj(json!({"filename": {"type": "string"}, "wait_for_selector": {"type": "string"}}), &["filename"]),
        ),
        // ----- desktop app -----
        "screenshot" => ("screenshot", "Take a screenshot of the application window.", obj(json!({}), &[])),
        "get_ui_tree" => (
            "get_ui_tree",
            "The window's accessibility tree (controls, names, types).",
            obj(json!({"max_depth": {"type": "integer"}}), &[]),
        ),
        "list_elements" => (
            "list_elements",
            "List interactive elements, optionally of one control type.",
            obj(json!({"control_type": {"type": "string"}}), &[]),
        ),
        "click" | "right_click" | "double_click" => {
            let (n, d) = match name {
                "click" => ("click", "Click an element (by name) or a point."),
                "right_click" => ("right_click", "Right-click an element (by name) or a point."),
                _ => ("double_click", "Double-click an element (by name) or a point."),
            };
            (n, d, obj(json!({"element": {"type": "string"}, "x": {"type": "integer"}, "y": {"type": "integer"}}), &[]))
        }
        "type_text" => {
            ("type_text", "Type text into the focused control.", obj(json!({"text": {"type": "string"}}), &["text"]))
        }
        "press_key" => (
            "press_key",
            "Press a key or combination, e.g. Enter, Alt+F4.",
            obj(json!({"key": {"type": "string"}}), &["key"]),
        ),
        "scroll" => (
            "scroll",
            "Scroll the window.",
            obj(
                json!({"direction": {"type": "string", "enum": ["up", "down", "left", "right"]}, "amount": {"type": "integer"}}),
                &["direction"],
            ),
        ),
        "switch_window" => (
            "switch_window",
            "Bring a window to the front by (part of) its title.",
            obj(json!({"title": {"type": "string"}}), &["title"]),
        ),
        "get_window_info" => {
            ("get_window_info", "Title, size and position of the current window.", obj(json!({}), &[]))
        }
        // ----- shell -----
        "run_command" => (
            "run_command",
            "Run a shell command on the target; returns exit code, stdout and stderr.",
            obj(
                json!({"command": {"type": "string"}, "timeout_s": {"type": "integer", "description": "Default 60"},
                       "cwd": {"type": "string"}}),
                &["command"],
            ),
        ),
        "read_file" => (
            "read_file",
            "Read a text file on the target (bounded).",
            obj(json!({"path": {"type": "string"}, "max_bytes": {"type": "integer"}}), &["path"]),
        ),
        "list_dir" => {
            ("list_dir", "List a directory on the target.", obj(json!({"path": {"type": "string"}}), &["path"]))
        }
        "write_file" => (
            "write_file",
            "Write a text file on the target.",
            obj(json!({"path": {"type": "string"}, "content": {"type": "string"}}), &["path", "content"]),
        ),
        // ----- local -----
        "save_note" => (
            "save_note",
            "Record a finding or progress note; notes go into the report.",
            obj(json!({"content": {"type": "string"}, "title": {"type": "string"}}), &["content"]),
        ),
        "finish_exploration" => (
            "finish_exploration",
            "End the exploration with a summary and a markdown report of what you observed.",
            obj(json!({"summary": {"type": "string"}, "report_markdown": {"type": "string"}}), &["summary"]),
        ),
        "finish_task" => (
            "finish_task",
            "End the task with a summary (and optionally a full markdown report).",
            obj(json!({"summary": {"type": "string"}, "report_markdown": {"type": "string"}}), &["summary"]),
        ),
        "request_confirmation" => (
            "request_confirmation",
            "Ask the user to approve a risky action (batch downloads, submitting forms, deleting). Returns {approved}.",
            obj(
                json!({"action": {"type": "string", "description": "Short slug, e.g. batch_download"},
                       "description": {"type": "string"}, "details": {"type": "array", "items": {"type": "string"}},
                       "risk_level": {"type": "string", "enum": ["low", "medium", "high"]}}),
                &["action", "description"],
            ),
        ),
        "save_file" => (
            "save_file",
            "Save text (CSV, JSON, markdown…) or base64 bytes as a file in the session's files.",
            obj(
                json!({"filename": {"type": "string"}, "content": {"type": "string"},
                       "encoding": {"type": "string", "enum": ["utf8", "base64"]}}),
                &["filename", "content"],
            ),
        ),
        "send_notification" => (
            "send_notification",
            "Notify the user (Telegram and/or webhook, as configured for this session).",
            obj(json!({"message": {"type": "string"}, "include_files": {"type": "boolean"}}), &["message"]),
        ),
        "perform_login" => (
            "perform_login",
            "Log in with the credentials stored for this session. You never see them; the controller types them.",
            obj(json!({}), &[]),
        ),
        "search_history" => (
            "search_history",
            "Search this session's log (earlier commands and their results).",
            obj(json!({"query": {"type": "string"}, "max_results": {"type": "integer"}}), &["query"]),
        ),
        _ => return None,
    };
    Some(ToolDef { name, description, input_schema })
}

/// Check `value` against the subset of JSON Schema our definitions use.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "input")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let type_ok = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !type_ok {
        return Err(format!("`{at}` must be of type {}", schema["type"].as_str().unwrap_or("?")));
    }
    if let Some(options) = schema["enum"].as_array() {
        if !options.contains(value) {
            return Err(format!("`{at}` must be one of {}", Value::Array(options.clone())));
        }
    }
    if let Some(map) = value.as_object() {
        for req in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if map.get(req).is_none_or(Value::is_null) {
                return Err(format!("missing required `{req}` in `{at}`"));
            }
        }
        if let Some(props) = schema["properties"].as_object() {
            for (key, v) in map {
                match props.get(key) {
                    Some(sub) if !v.is_null() => check(sub, v, key)?,
                    Some(_) => {}
                    None => return Err(format!("unknown argument `{key}` in `{at}`")),
                }
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            check(items, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asked_timeout_is_capped() {
        let config = Config::default();
        let t = timeout_for("run_command", &json!({"timeout_s": u64::MAX}), &config);
        assert_eq!(t, Duration::from_secs(MAX_ASKED_TIMEOUT_S + 15));
        let t = timeout_for("browser_wait_for", &json!({"timeout_s": 5}), &config);
        assert_eq!(t, Duration::from_secs(config.task.command_timeout_s).max(Duration::from_secs(20)));
    }

    #[test]
    fn set_sizes_match_the_design() {
        use Mode::*;
        use SessionType::*;
        assert_eq!(tool_names(Explore, App, false).len(), 13);
        assert_eq!(tool_names(Explore, Browser, false).len(), 17);
        assert_eq!(tool_names(Explore, Browser, true).len(), 18);
        assert_eq!(tool_names(Task, App, false).len(), 16);
        assert_eq!(tool_names(Task, Browser, true).len(), 29);
        assert_eq!(tool_names(Task, Browser, false).len(), 28);
        assert_eq!(
            tool_names(Explore, Shell, false),
            vec!["run_command", "read_file", "list_dir", "search_history", "save_note", "finish_exploration"]
        );
        assert!(tool_names(Task, Shell, false).contains(&"write_file"));
        for mode in [Explore, Task] {
            for kind in [App, Browser, Shell] {
                let names = tool_names(mode, kind, true);
                assert_eq!(toolset(mode, kind, true).len(), names.len(), "every tool has a definition");
            }
        }
    }

    #[test]
    fn validation_catches_bad_arguments() {
        let schema = definition("browser_download_batch").unwrap().input_schema;
        assert!(validate(&schema, &json!({"urls": [{"url": "https://a/x.pdf"}]})).is_ok());
        assert!(validate(&schema, &json!({})).unwrap_err().contains("urls"));
        assert!(validate(&schema, &json!({"urls": [{"filename": "x"}]})).unwrap_err().contains("url"));
        assert!(validate(&schema, &json!({"urls": "x"})).unwrap_err().contains("array"));
        let schema = definition("request_confirmation").unwrap().input_schema;
        assert!(validate(&schema, &json!({"action": "a", "description": "d", "risk_level": "extreme"})).is_err());
        assert!(validate(&schema, &json!({"action": "a", "description": "d", "bogus": 1})).is_err());
    }
}

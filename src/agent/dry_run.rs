//! Dry runs: a tool the table marks as acting says what it would have done, in words a person
//! checking the plan can read ("(dry-run) click at (412, 230) in 'Calculator'"), and does
//! nothing. Observing tools run as usual, so the model still sees the real target.

use super::Agent;
use super::outcome::ToolOutcome;
use crate::llm::Block;
use crate::protocol::SessionType;
use crate::protocol::tools::Tool;
use serde_json::Value;

impl Agent {
    pub(super) fn dry_run(&self, tool: Tool, input: &Value) -> ToolOutcome {
        let mut what = describe(tool, input);
        if self.record.session_type == SessionType::App {
            what.push_str(&format!(" in '{}'", self.record.target));
        }
        let text = format!("(dry-run) {what}; nothing was done");
        ToolOutcome { dry_run: true, ..ToolOutcome::blocks(vec![Block::text(text)]) }
    }
}

fn s<'a>(input: &'a Value, key: &str) -> &'a str {
    input[key].as_str().unwrap_or("")
}

fn point(input: &Value, x: &str, y: &str) -> String {
    format!("({}, {})", input[x], input[y])
}

/// What an acting tool would do, from its arguments.
fn describe(tool: Tool, input: &Value) -> String {
    let count = |key: &str| input[key].as_array().map_or(0, Vec::len);
    match tool {
        Tool::Click | Tool::RightClick | Tool::DoubleClick => {
            let verb = tool.name().replace('_', "-");
            match input["element"].as_str() {
                Some(e) => format!("{verb} on '{e}'"),
                None => format!("{verb} at {}", point(input, "x", "y")),
            }
        }
        Tool::Drag => format!("drag from {} to {}", point(input, "from_x", "from_y"), point(input, "to_x", "to_y")),
        Tool::TypeText => format!("type {:?}", s(input, "text")),
        Tool::BrowserType => format!("type {:?} into {}", s(input, "text"), s(input, "selector")),
        Tool::PressKey | Tool::BrowserPressKey => format!("press {}", s(input, "key")),
        Tool::BrowserNavigate => format!("open {}", s(input, "url")),
        Tool::BrowserBack => "go back".into(),
        Tool::BrowserForward => "go forward".into(),
        Tool::BrowserClick => format!("click {}", s(input, "selector")),
        Tool::BrowserSelectOption => format!("choose {:?} in {}", s(input, "value"), s(input, "selector")),
        Tool::BrowserFillForm => format!("fill {} form fields", count("fields")),
        Tool::BrowserSubmitForm => "submit the form".into(),
        Tool::BrowserDownload => format!("download {}", s(input, "url")),
        Tool::BrowserDownloadBatch => format!("download {} files", count("urls")),
        Tool::RunCommand => format!("run `{}`", s(input, "command")),
        Tool::WriteFile => format!("write {} characters to {}", s(input, "content").chars().count(), s(input, "path")),
        Tool::SendNotification => format!("send the notification {:?}", s(input, "message")),
        Tool::PerformLogin => "log in with the stored credentials".into(),
        other => format!("{} {input}", other.name()),
    }
}

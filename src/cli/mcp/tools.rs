//! The MCP server's tools: one table (`TOOLS`), each entry with its name, title, description,
//! input schema, what it does to the world (`Effect`, for the client's annotations) and its
//! handler. `tools/list` is made from the table and `tools/call` routes by it, so a tool is
//! added in one place.
//!
//! Schemas are JSON text, parsed when listed or checked (a unit test parses every one).

use super::Call;
use super::handlers as h;
use super::rpc::ToolResult;
use crate::cli::client::ClientError;
use serde::Serialize;
use serde_json::Value;

/// What a tool does to the world, as the client's annotations say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only; calling it again is harmless.
    Reads,
    /// Adds something with each call (a session, an answer, a run).
    Adds,
    /// Changes something, but a second call changes nothing more (a pause, a saved file).
    Sets,
    /// May destroy or act irreversibly (an approved action, a tool run on the target).
    Destroys,
    /// Destroys, but a second call changes nothing more (a stop).
    Ends,
}

/// The annotations of a tool (MCP `ToolAnnotations`).
#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub title: &'static str,
    pub read_only_hint: bool,
    pub destructive_hint: bool,
    pub idempotent_hint: bool,
    pub open_world_hint: bool,
}

impl Effect {
    fn annotations(self, title: &'static str) -> Annotations {
        let (read_only, destructive, idempotent) = match self {
            Effect::Reads => (true, false, true),
            Effect::Adds => (false, false, false),
            Effect::Sets => (false, false, true),
            Effect::Destroys => (false, true, false),
            Effect::Ends => (false, true, true),
        };
        Annotations {
            title,
            read_only_hint: read_only,
            destructive_hint: destructive,
            idempotent_hint: idempotent,
            open_world_hint: !read_only,
        }
    }
}

/// A tool's work: the call's arguments (already checked against its schema) to its result.
pub type Handler = fn(&Call<'_>) -> Result<ToolResult, ClientError>;

/// One MCP tool.
pub struct McpTool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The input schema's `properties`, as JSON text.
    pub properties: &'static str,
    pub required: &'static [&'static str],
    pub effect: Effect,
    pub run: Handler,
}

/// A tool as `tools/list` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub annotations: Annotations,
}

impl McpTool {
    /// The input schema: an object of these properties, nothing else.
    pub fn schema(&self) -> Value {
        let props: Value = serde_json::from_str(self.properties).unwrap_or_default();
        serde_json::json!({"type": "object", "properties": props, "required": self.required,
            "additionalProperties": false})
    }

    pub fn listed(&self) -> Listed {
        Listed {
            name: self.name,
            title: self.title,
            description: self.description,
            input_schema: self.schema(),
            annotations: self.effect.annotations(self.title),
        }
    }
}

pub fn find(name: &str) -> Option<&'static McpTool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// `tools/list`'s result.
#[derive(Debug, Serialize)]
pub struct ToolList {
    pub tools: Vec<Listed>,
}

pub fn list() -> ToolList {
    ToolList { tools: TOOLS.iter().map(McpTool::listed).collect() }
}

const SESSION: &str = r#"{"session_id": {"type": "string"}}"#;
const NOTHING: &str = "{}";

/// Every tool the server offers, in the order `tools/list` shows them.
pub static TOOLS: &[McpTool] = &[
    McpTool {
        name: "create_session",
        title: "Create a session",
        description: "Start an automation session on a worker: mode `task` (do something: download, scrape, fill \
            forms, run commands) or `explore` (observe and report). target is a URL (browser), a window title \
            (desktop app) or a host (type shell).",
        properties: r#"{"mode": {"type": "string", "enum": ["task", "explore"]}, "target": {"type": "string"},
            "type": {"type": "string", "enum": ["browser", "app", "shell"]}, "instruction": {"type": "string"},
            "goal": {"type": "string"}, "worker": {"type": "string"}, "max_turns": {"type": "integer"},
            "auto_confirm": {"type": "boolean"},
            "allowed_domains": {"type": "array", "items": {"type": "string"},
                "description": "the only hosts the browser may reach, e.g. [\"example.com\", \"*.example.com\"]"},
            "files": {"type": "array", "items": {"type": "string"},
                "description": "local files to hand the session (absolute paths); the page gets them by browser_upload_file"},
            "browser_profile": {"type": "string",
                "description": "a browser profile the worker keeps between sessions (stays signed in)"}}"#,
        required: &["mode", "target"],
        effect: Effect::Adds,
        run: h::create_session,
    },
    McpTool {
        name: "list_sessions",
        title: "List sessions",
        description: "All sessions, newest first.",
        properties: NOTHING,
        required: &[],
        effect: Effect::Reads,
        run: h::list_sessions,
    },
    McpTool {
        name: "get_session",
        title: "Get a session",
        description: "Status, turn, files, usage, pending confirmation, summary or error.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::get_session,
    },
    McpTool {
        name: "get_log",
        title: "Read a session's log",
        description: "Log entries after `after` (0 = from the start); returns `next` to continue.",
        properties: r#"{"session_id": {"type": "string"}, "after": {"type": "integer"}}"#,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::get_log,
    },
    McpTool {
        name: "get_report",
        title: "Read the report",
        description: "The session's report (markdown).",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::get_report,
    },
    McpTool {
        name: "get_notes",
        title: "Read the notes",
        description: "Notes the agent saved.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::get_notes,
    },
    McpTool {
        name: "list_files",
        title: "List files",
        description: "Downloaded, generated and screenshot files of a session.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::list_files,
    },
    McpTool {
        name: "get_file",
        title: "Get a file",
        description: "A session file: text inline, images as images, anything else saved to a local folder (the \
            path is returned).",
        properties: r#"{"session_id": {"type": "string"}, "filename": {"type": "string"}}"#,
        required: &["session_id", "filename"],
        effect: Effect::Sets,
        run: h::get_file,
    },
    McpTool {
        name: "export_session",
        title: "Export a run as a script",
        description: "The session's run as a script to keep: a browser session as a Playwright (Python) script, a \
            shell session as sh. It holds no secret: it reads them from the environment variables its header names.",
        properties: r#"{"session_id": {"type": "string"}, "format": {"type": "string", "enum": ["playwright", "sh"]}}"#,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::export_session,
    },
    McpTool {
        name: "get_recording",
        title: "Get the recording",
        description: "A browser or desktop session as an animated GIF (a frame per acting step, its number and \
            action as a caption, secret fields painted over), saved to a local folder (the path is returned) and \
            shown when small.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Sets,
        run: h::get_recording,
    },
    McpTool {
        name: "respond_confirmation",
        title: "Answer a confirmation",
        description: "Approve or deny the action the session is waiting on (see wait_for_session / get_session). A \
            denial may say why (the session's model is told); a command may be approved in an edited form.",
        properties: r#"{"session_id": {"type": "string"}, "approved": {"type": "boolean"},
            "confirmation_id": {"type": "string"}, "reason": {"type": "string"}, "edited_command": {"type": "string"}}"#,
        required: &["session_id", "approved"],
        effect: Effect::Destroys,
        run: h::respond_confirmation,
    },
    McpTool {
        name: "answer_question",
        title: "Answer a question",
        description: "Answer the question the session's agent asked a person (see wait_for_session / get_session).",
        properties: r#"{"session_id": {"type": "string"}, "text": {"type": "string"}}"#,
        required: &["session_id", "text"],
        effect: Effect::Adds,
        run: h::answer_question,
    },
    McpTool {
        name: "replay_session",
        title: "Replay a session",
        description: "Re-run a finished session's steps without the model, as a new session (params fill {{name}} \
            in the recorded steps or replace a recorded value); where the page changed, the model takes over. \
            Follow it with wait_for_session.",
        properties: r#"{"session_id": {"type": "string"},
            "params": {"type": "object", "additionalProperties": {"type": "string"}}, "instruction": {"type": "string"}}"#,
        required: &["session_id"],
        effect: Effect::Adds,
        run: h::replay_session,
    },
    McpTool {
        name: "stop_session",
        title: "Stop a session",
        description: "Stop a running session.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Ends,
        run: h::stop_session,
    },
    McpTool {
        name: "pause_session",
        title: "Pause a session",
        description: "Pause a running session after the step in flight (wait_for_session returns once it is \
            paused); its model makes no call until resume_session. While it is paused, act runs its worker tools \
            on the target yourself; stop_session still ends it.",
        properties: SESSION,
        required: &["session_id"],
        effect: Effect::Sets,
        run: h::pause_session,
    },
    McpTool {
        name: "act",
        title: "Act in a paused session",
        description: "Run one of a paused session's worker tools (e.g. browser_click, run_command) on its target \
            yourself; input holds the tool's arguments ({} or left out when it takes none). Returns the tool's \
            result. pause_session first; one act at a time.",
        properties: r#"{"session_id": {"type": "string"}, "tool": {"type": "string"}, "input": {"type": "object"}}"#,
        required: &["session_id", "tool"],
        effect: Effect::Destroys,
        run: h::act,
    },
    McpTool {
        name: "resume_session",
        title: "Resume a session",
        description: "Let a paused session go on; a note tells its model what you did or what you want next.",
        properties: r#"{"session_id": {"type": "string"}, "note": {"type": "string"}}"#,
        required: &["session_id"],
        effect: Effect::Sets,
        run: h::resume_session,
    },
    McpTool {
        name: "list_schedules",
        title: "List schedules",
        description: "Scheduled sessions: each with its definition, runs, last run (session, status, when) and next \
            run.",
        properties: NOTHING,
        required: &[],
        effect: Effect::Reads,
        run: h::list_schedules,
    },
    McpTool {
        name: "run_schedule",
        title: "Run a schedule now",
        description: "Start a run of a schedule now (refused while its previous run goes on). Follow it with \
            wait_for_session.",
        properties: r#"{"name": {"type": "string"}}"#,
        required: &["name"],
        effect: Effect::Adds,
        run: h::run_schedule,
    },
    McpTool {
        name: "list_workers",
        title: "List workers",
        description: "Workers, their capabilities and which session each serves.",
        properties: NOTHING,
        required: &[],
        effect: Effect::Reads,
        run: h::list_workers,
    },
    McpTool {
        name: "wait_for_session",
        title: "Wait for a session",
        description: "Wait (at most ~50 s) until the session changes status, asks for a confirmation, or ends; \
            returns its state and new log lines. Call again to keep waiting.",
        properties: r#"{"session_id": {"type": "string"}, "timeout_s": {"type": "integer"}}"#,
        required: &["session_id"],
        effect: Effect::Reads,
        run: h::wait_for_session,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_schema_parses_and_requires_only_what_it_names() {
        for t in TOOLS {
            let props: Value = serde_json::from_str(t.properties).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            for r in t.required {
                assert!(props.get(r).is_some(), "{} requires {r}, which it does not name", t.name);
            }
            if t.required.contains(&"session_id") || props.get("session_id").is_some() {
                assert_eq!(props["session_id"]["type"], "string", "{}", t.name);
            }
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        let names: HashSet<&str> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), TOOLS.len());
        for t in TOOLS {
            assert!(std::ptr::eq(find(t.name).unwrap(), t));
        }
        assert!(find("no_such_tool").is_none());
    }

    #[test]
    fn effects_become_the_annotations() {
        let of = |name: &str| serde_json::to_value(find(name).unwrap().listed()).unwrap()["annotations"].clone();
        let stop = of("stop_session");
        assert_eq!((stop["destructiveHint"].clone(), stop["idempotentHint"].clone()), (true.into(), true.into()));
        let wait = of("wait_for_session");
        assert_eq!((wait["readOnlyHint"].clone(), wait["openWorldHint"].clone()), (true.into(), false.into()));
        assert_eq!(of("create_session")["idempotentHint"], false);
        assert_eq!(of("act")["destructiveHint"], true);
    }
}

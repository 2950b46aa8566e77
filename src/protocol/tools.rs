//! The tool table: every tool the model may call, as one entry each.
//!
//! An entry says the tool's name, its description and input schema (what the model sees, and
//! for target tools also the `params` of the worker command), where it runs (the controller,
//! or the session's target: a worker or an SSH host), which mode × type sets offer it, and how
//! long it may take. The catalog sent to the model, the agent loop's routing and the worker's
//! dispatch all read this table: adding a tool is one `Tool` variant, one entry in
//! `Tool::spec`, and its handler. The compiler checks that every variant has an entry.

mod outputs;

pub use outputs::OUTPUT_TOOLS;

use super::{Mode, SessionType};
use serde_json::{Value, json};

/// Where a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// In the controller (notes, files, confirmations, notifications, login, finish).
    Controller,
    /// On the session's target, by the backend for this kind of session.
    Target(SessionType),
}

/// How long a target tool may take (the durations come from the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// `task.command_timeout_s`.
    Command,
    /// `task.download_timeout_s`: downloads and printing.
    Download,
    /// The call's own `timeout_s` (capped), at least `task.command_timeout_s`.
    Asked,
}

/// The mode × type sets that offer a tool.
#[derive(Debug, Clone, Copy)]
pub struct Sets {
    pub explore: &'static [SessionType],
    pub task: &'static [SessionType],
}

impl Sets {
    pub fn contains(&self, mode: Mode, kind: SessionType) -> bool {
        match mode {
            Mode::Explore => self.explore.contains(&kind),
            Mode::Task => self.task.contains(&kind),
        }
    }
}

use SessionType::{App, Browser, Shell};
const BROWSER_ALL: Sets = Sets { explore: &[Browser], task: &[Browser] };
const BROWSER_TASK: Sets = Sets { explore: &[], task: &[Browser] };
const APP_ALL: Sets = Sets { explore: &[App], task: &[App] };
const SHELL_ALL: Sets = Sets { explore: &[Shell], task: &[Shell] };
const SHELL_TASK: Sets = Sets { explore: &[], task: &[Shell] };
/// Offered to no model: what the controller itself asks of a worker (the recording's frames).
const NO_MODEL: Sets = Sets { explore: &[], task: &[] };
const EVERY: Sets = Sets { explore: &[Browser, App, Shell], task: &[Browser, App, Shell] };
const EXPLORE_ALL: Sets = Sets { explore: &[Browser, App, Shell], task: &[] };
const TASK_ALL: Sets = Sets { explore: &[], task: &[Browser, App, Shell] };

/// One entry of the table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub description: &'static str,
    pub input_schema: Schema,
    pub runs: Runs,
    pub sets: Sets,
    pub timeout: Timeout,
    /// Offered only when the session has credentials in its vault.
    pub needs_credentials: bool,
    /// It changes something (clicks, typing, navigation, downloads, commands): a dry run only
    /// says what it would do.
    pub acts: bool,
    /// Not shown to the model (a short catalog serves small models); it still runs when called
    /// by name.
    pub unlisted: bool,
}

macro_rules! tools {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// Every tool, in the order the catalog lists them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Tool { $($variant),* }

        impl Tool {
            pub const ALL: &'static [Tool] = &[$(Tool::$variant),*];

            /// The name the model calls and the worker command's `action`.
            pub const fn name(self) -> &'static str {
                match self { $(Tool::$variant => $name),* }
            }
        }
    };
}

tools! {
    BrowserNavigate = "browser_navigate",
    BrowserSnapshot = "browser_snapshot",
    BrowserScreenshot = "browser_screenshot",
    BrowserGetDom = "browser_get_dom",
    BrowserGetText = "browser_get_text",
    BrowserClick = "browser_click",
    BrowserType = "browser_type",
    BrowserPressKey = "browser_press_key",
    BrowserScroll = "browser_scroll",
    BrowserHover = "browser_hover",
    BrowserSelectOption = "browser_select_option",
    BrowserWaitFor = "browser_wait_for",
    BrowserBack = "browser_back",
    BrowserForward = "browser_forward",
    BrowserGetPageInfo = "browser_get_page_info",
    BrowserSwitchTab = "browser_switch_tab",
    PerformLogin = "perform_login",
    Screenshot = "screenshot",
    GetUiTree = "get_ui_tree",
    ListElements = "list_elements",
    Click = "click",
    RightClick = "right_click",
    DoubleClick = "double_click",
    TypeText = "type_text",
    PressKey = "press_key",
    Scroll = "scroll",
    SwitchWindow = "switch_window",
    GetWindowInfo = "get_window_info",
    Move = "move",
    Drag = "drag",
    Wait = "wait",
    RunCommand = "run_command",
    ReadFile = "read_file",
    ListDir = "list_dir",
    SearchHistory = "search_history",
    WriteFile = "write_file",
    SaveNote = "save_note",
    FinishExploration = "finish_exploration",
    BrowserDownload = "browser_download",
    BrowserDownloadBatch = "browser_download_batch",
    BrowserScrapeLinks = "browser_scrape_links",
    BrowserScrapeTable = "browser_scrape_table",
    BrowserScrapeText = "browser_scrape_text",
    BrowserFillForm = "browser_fill_form",
    BrowserUploadFile = "browser_upload_file",
    BrowserSubmitForm = "browser_submit_form",
    BrowserAnswerDialog = "browser_answer_dialog",
    BrowserSaveAsPdf = "browser_save_as_pdf",
    RequestConfirmation = "request_confirmation",
    AskUser = "ask_user",
    SaveFile = "save_file",
    SendNotification = "send_notification",
    RequestTakeover = "request_takeover",
    FinishTask = "finish_task",
    ToolOutputsList = "tool_outputs_list",
    ToolOutputsStats = "tool_outputs_stats",
    ToolOutputsExtract = "tool_outputs_extract",
    ToolOutputsCount = "tool_outputs_count",
    ToolOutputsSample = "tool_outputs_sample",
    BrowserRecordingFrame = "browser_recording_frame",
    RecordingFrame = "recording_frame",
}

/// A tool's input: an object with these properties (JSON text, parsed only when the schema is
/// sent or checked, so looking an entry up allocates nothing) and these required.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    properties: &'static str,
    required: &'static [&'static str],
}

impl Schema {
    /// The JSON Schema sent to the model and checked against its input.
    pub fn to_value(self) -> Value {
        // Every entry's text parses (`every_schema_is_an_object_with_its_required_properties`).
        let properties: Value = serde_json::from_str(self.properties).unwrap_or_else(|_| json!({}));
        // An empty `required` says nothing a schema without it does not, and costs every request.
        match self.required {
            [] => json!({"type": "object", "properties": properties}),
            required => json!({"type": "object", "properties": properties, "required": required}),
        }
    }
}

fn obj(properties: &'static str, required: &'static [&'static str]) -> Schema {
    Schema { properties, required }
}

fn selector_only() -> Schema {
    // The forms that name an element, with real examples (the click's schema says it once).
    obj(
        r##"{"selector": {"type": "string", "description": "A ref (`ref=e12`), a CSS selector or `text=Sign in`"}}"##,
        &["selector"],
    )
}

fn no_input() -> Schema {
    obj("{}", &[])
}

fn point_or_element() -> Schema {
    obj(r#"{"element": {"type": "string"}, "x": {"type": "integer"}, "y": {"type": "integer"}}"#, &[])
}

const FRAME: &str = "The page or screen now as one recording frame (a GIF), masked, with the caption drawn below.";

fn frame_input() -> Schema {
    obj(r#"{"caption": {"type": "string"}}"#, &["caption"])
}

fn finish_input() -> Schema {
    obj(r#"{"summary": {"type": "string"}, "report_markdown": {"type": "string"}}"#, &["summary"])
}

/// An entry with the common defaults: the command timeout, no credentials needed.
fn entry(runs: Runs, sets: Sets, description: &'static str, input_schema: Schema) -> Spec {
    Spec {
        description,
        input_schema,
        runs,
        sets,
        timeout: Timeout::Command,
        needs_credentials: false,
        acts: false,
        unlisted: false,
    }
}

fn browser(sets: Sets, description: &'static str, input_schema: Schema) -> Spec {
    entry(Runs::Target(Browser), sets, description, input_schema)
}

fn app(description: &'static str, input_schema: Schema) -> Spec {
    entry(Runs::Target(App), APP_ALL, description, input_schema)
}

fn shell(sets: Sets, description: &'static str, input_schema: Schema) -> Spec {
    entry(Runs::Target(Shell), sets, description, input_schema)
}

fn local(sets: Sets, description: &'static str, input_schema: Schema) -> Spec {
    entry(Runs::Controller, sets, description, input_schema)
}

impl Spec {
    fn timeout(self, timeout: Timeout) -> Spec {
        Spec { timeout, ..self }
    }

    fn acting(self) -> Spec {
        Spec { acts: true, ..self }
    }

    fn unlisted(self) -> Spec {
        Spec { unlisted: true, ..self }
    }

    /// In no session's sets at all (`app` puts a tool in every desktop session's).
    fn unlisted_for_all(self) -> Spec {
        Spec { sets: NO_MODEL, unlisted: true, ..self }
    }
}

impl Tool {
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The tools offered to a session, in the table's order.
    pub fn offered(mode: Mode, kind: SessionType, has_credentials: bool) -> Vec<Tool> {
        Tool::ALL
            .iter()
            .copied()
            .filter(|t| {
                let spec = t.spec();
                spec.sets.contains(mode, kind) && (has_credentials || !spec.needs_credentials)
            })
            .collect()
    }

    /// The table entry.
    pub fn spec(self) -> Spec {
        use Tool::*;
        match self {
            // ----- browser, observe -----
            BrowserNavigate => browser(
                BROWSER_ALL,
                "Open a URL. Answers with the page's snapshot.",
                obj(r#"{"url": {"type": "string"}}"#, &["url"]),
            ).acting(),
            BrowserSnapshot => browser(
                BROWSER_ALL,
                "The current page as text with refs to act on; a long page comes in parts (page 2…).",
                obj(r#"{"page": {"type": "integer"}}"#, &[]),
            ),
            BrowserScreenshot => browser(
                BROWSER_ALL,
                "Take a screenshot of the current page (viewport, or the whole page).",
                obj(r#"{"full_page": {"type": "boolean"}}"#, &[]),
            )
            .unlisted(),
            BrowserGetDom => browser(
                BROWSER_ALL,
                "A compact outline of the page: headings, links, buttons, form fields and tables, each with a selector that works. Read this before acting.",
                obj(r#"{"selector": {"type": "string", "description": "Only the part under this element"}}"#, &[]),
            )
            .unlisted(),
            BrowserGetText => browser(
                BROWSER_ALL,
                "The visible text of the page or of one element.",
                obj(r#"{"selector": {"type": "string"}}"#, &[]),
            )
            .unlisted(),
            BrowserClick => browser(BROWSER_ALL, "Click an element. Answers with the page after the click.", selector_only()).acting(),
            BrowserType => browser(
                BROWSER_ALL,
                "Type text into a field.",
                obj(r#"{"selector": {"type": "string"}, "text": {"type": "string"}, "clear": {"type": "boolean"}, "press_enter": {"type": "boolean"}}"#,
                    &["selector", "text"]),
            ).acting(),
            BrowserPressKey => browser(
                BROWSER_ALL,
                "Press a key, e.g. Enter, Tab, Control+A.",
                obj(r#"{"key": {"type": "string"}}"#, &["key"]),
            ).acting(),
            BrowserScroll => browser(
                BROWSER_ALL,
                "Scroll the page (a screen down by default), or an element into view.",
                obj(concat!(r#"{"direction": {"type": "string", "enum": ["up", "down", "left", "right"]},"#,
                            r#" "amount": {"type": "integer"}, "selector": {"type": "string"}}"#), &[]),
            ),
            BrowserHover => browser(BROWSER_ALL, "Move the mouse over an element.", selector_only()).unlisted(),
            BrowserSelectOption => browser(
                BROWSER_ALL,
                "Choose an option of a select, by value or label.",
                obj(r#"{"selector": {"type": "string"}, "value": {"type": "string"}}"#, &["selector", "value"]),
            ).acting(),
            BrowserWaitFor => browser(
                BROWSER_ALL,
                "Wait until an element or a text appears.",
                obj(concat!(r#"{"selector": {"type": "string"}, "text": {"type": "string"},"#,
                            r#" "timeout_s": {"type": "integer", "description": "Default 30"}}"#), &[]),
            )
            .timeout(Timeout::Asked)
            .unlisted(),
            BrowserBack => browser(BROWSER_ALL, "Go back.", no_input()).acting(),
            BrowserForward => browser(BROWSER_ALL, "Go forward in history.", no_input()).acting().unlisted(),
            BrowserGetPageInfo => {
                browser(BROWSER_ALL, "URL, title, open tabs and scroll position of the current page.", no_input()).unlisted()
            }
            BrowserSwitchTab => browser(
                BROWSER_ALL,
                "Switch to another open tab by index or by part of its URL.",
                obj(r#"{"index": {"type": "integer"}, "url_contains": {"type": "string"}}"#, &[]),
            )
            .unlisted(),
            PerformLogin => Spec {
                needs_credentials: true,
                acts: true,
                ..local(
                    BROWSER_ALL,
                    "Log in with the stored credentials (typed for you; you never see them).",
                    no_input(),
                )
            },
            // ----- desktop app -----
            Screenshot => app("Take a screenshot of the application window.", no_input()),
            GetUiTree => app(
                "The windows, and the accessibility tree of those on screen (controls, names, roles, ids).",
                obj(concat!(r#"{"max_depth": {"type": "integer"},"#,
                            r#" "window": {"type": "string", "description": "Part of a window title: only its widgets"}}"#), &[]),
            ),
            ListElements => app(
                "List the windows and interactive elements (ids click takes), optionally of one control type.",
                obj(concat!(r#"{"control_type": {"type": "string", "description": "A role, e.g. button, label, window"},"#,
                            r#" "window": {"type": "string", "description": "Part of a window title: only its elements"}}"#), &[]),
            ),
            Click => app("Click an element (by name) or a point.", point_or_element()).acting(),
            RightClick => app("Right-click an element (by name) or a point.", point_or_element()).acting(),
            DoubleClick => app("Double-click an element (by name) or a point.", point_or_element()).acting(),
            TypeText => app("Type text into the focused control.", obj(r#"{"text": {"type": "string"}}"#, &["text"])).acting(),
            PressKey => {
                app("Press a key or combination, e.g. Enter, Alt+F4.", obj(r#"{"key": {"type": "string"}}"#, &["key"])).acting()
            }
            Scroll => app(
                "Scroll the window.",
                obj(r#"{"direction": {"type": "string", "enum": ["up", "down", "left", "right"]}, "amount": {"type": "integer"}}"#, &["direction"]),
            ),
            SwitchWindow => app(
                "Bring a window to the front by (part of) its title.",
                obj(r#"{"title": {"type": "string"}}"#, &["title"]),
            ),
            GetWindowInfo => app("Title, size and position of the current window.", no_input()),
            Move => app(
                "Move the mouse pointer to a point (hover), in the last screenshot's pixels.",
                obj(r#"{"x": {"type": "integer"}, "y": {"type": "integer"}}"#, &["x", "y"]),
            ),
            Drag => app(
                "Press the left button at one point, move to another and release there (screenshot pixels).",
                obj(concat!(r#"{"from_x": {"type": "integer"}, "from_y": {"type": "integer"}, "to_x": {"type": "integer"},"#,
                            r#" "to_y": {"type": "integer"}}"#), &["from_x", "from_y", "to_x", "to_y"]),
            )
            .acting(),
            // Waited in the controller: nothing for a worker to do, and a stop ends it at once.
            Wait => local(
                APP_ALL,
                "Wait a while for the application (at most 10000 ms).",
                obj(r#"{"ms": {"type": "integer", "description": "Milliseconds, at most 10000"}}"#, &["ms"]),
            ),
            // ----- shell -----
            RunCommand => shell(
                SHELL_ALL,
                "Run a shell command on the target; returns exit code, stdout and stderr.",
                obj(concat!(r#"{"command": {"type": "string"}, "timeout_s": {"type": "integer", "description": "Default 60"},"#,
                            r#" "cwd": {"type": "string"}}"#), &["command"]),
            )
            .timeout(Timeout::Asked).acting(),
            ReadFile => shell(
                SHELL_ALL,
                "Read a text file on the target (bounded).",
                obj(r#"{"path": {"type": "string"}, "max_bytes": {"type": "integer"}}"#, &["path"]),
            ),
            ListDir => {
                shell(SHELL_ALL, "List a directory on the target.", obj(r#"{"path": {"type": "string"}}"#, &["path"]))
            }
            SearchHistory => local(
                SHELL_ALL,
                "Search this session's log (earlier commands and their results).",
                obj(r#"{"query": {"type": "string"}, "max_results": {"type": "integer"}}"#, &["query"]),
            ),
            WriteFile => shell(
                SHELL_TASK,
                "Write a file on the target (its content as text, or as base64 for bytes).",
                obj(concat!(r#"{"path": {"type": "string"}, "content": {"type": "string"},"#,
                            r#" "encoding": {"type": "string", "enum": ["utf8", "base64"]}}"#), &["path", "content"]),
            ).acting(),
            // ----- every session -----
            SaveNote => local(
                EVERY,
                "Note a finding; notes go into the report.",
                obj(r#"{"content": {"type": "string"}, "title": {"type": "string"}}"#, &["content"]),
            ),
            FinishExploration => local(
                EXPLORE_ALL,
                "End the exploration with a summary and a markdown report of what you observed.",
                finish_input(),
            ),
            // ----- browser, act -----
            BrowserDownload => browser(
                BROWSER_TASK,
                "Download a file by its URL into the session's files.",
                obj(r#"{"url": {"type": "string"}, "filename": {"type": "string"}}"#, &["url"]),
            )
            .timeout(Timeout::Download).acting(),
            BrowserDownloadBatch => browser(
                BROWSER_TASK,
                "Download several files by URL into the session's files.",
                obj(concat!(r#"{"urls": {"type": "array", "items": {"type": "object","#,
                            r#" "properties": {"url": {"type": "string"}, "filename": {"type": "string"}},"#,
                            r#" "required": ["url"]}}}"#), &["urls"]),
            )
            .timeout(Timeout::Download).acting().unlisted(),
            BrowserScrapeLinks => browser(
                BROWSER_TASK,
                "List links (text and absolute URL), optionally under a selector and matching a regex.",
                obj(concat!(r#"{"selector": {"type": "string"},"#,
                            r#" "pattern": {"type": "string", "description": "Regular expression on the URL"},"#,
                            r#" "attribute": {"type": "string", "description": "Attribute to read (default href)"}}"#), &[]),
            )
            .unlisted(),
            BrowserScrapeTable => browser(
                BROWSER_TASK,
                "Read a table (default: the page's first) as CSV; with a filename, save it as that file.",
                obj(r#"{"selector": {"type": "string"}, "format": {"type": "string", "enum": ["csv", "json"]}, "filename": {"type": "string"}}"#, &[]),
            ),
            BrowserScrapeText => browser(
                BROWSER_TASK,
                "Read the text of several elements at once, by name.",
                obj(concat!(r#"{"selectors": {"type": "array", "items": {"type": "object","#,
                            r#" "properties": {"name": {"type": "string"}, "selector": {"type": "string"}},"#,
                            r#" "required": ["name", "selector"]}}}"#), &["selectors"]),
            )
            .unlisted(),
            BrowserFillForm => browser(
                BROWSER_TASK,
                "Fill several form fields at once.",
                obj(concat!(r#"{"fields": {"type": "array", "items": {"type": "object","#,
                            r#" "properties": {"selector": {"type": "string"}, "value": {"type": "string"}, "type": {"type": "string"}},"#,
                            r#" "required": ["selector", "value"]}}}"#), &["fields"]),
            ).acting(),
            BrowserUploadFile => browser(
                BROWSER_TASK,
                "Put one of this session's files (one handed over, or one it downloaded) into a file field of the page.",
                obj(concat!(r#"{"selector": {"type": "string", "description": "The file field, or the button that opens the file chooser"},"#,
                            r#" "filename": {"type": "string", "description": "A file of this session, by its name"}}"#), &["selector", "filename"]),
            )
            .timeout(Timeout::Download).acting(),
            BrowserSubmitForm => browser(
                BROWSER_TASK,
                "Submit a form (by its selector or by clicking its submit button). Ask request_confirmation first.",
                obj(r#"{"selector": {"type": "string"}, "submit_selector": {"type": "string"}}"#, &[]),
            ).acting().unlisted(),
            BrowserAnswerDialog => browser(
                BROWSER_TASK,
                "How to answer the page's next confirm() or prompt() (otherwise the configured default, usually dismiss). Call it before the click that opens the dialog.",
                obj(r#"{"accept": {"type": "boolean"}, "text": {"type": "string", "description": "What to type into a prompt()"}}"#, &["accept"]),
            )
            .unlisted(),
            BrowserSaveAsPdf => browser(
                BROWSER_TASK,
                "Print the current page to a PDF in the session's files.",
                obj(r#"{"filename": {"type": "string"}}"#, &["filename"]),
            )
            .timeout(Timeout::Download),
            // ----- every task -----
            RequestConfirmation => local(
                TASK_ALL,
                "Ask the user to approve a risky step. Answers {approved}.",
                obj(concat!(r#"{"action": {"type": "string", "description": "A short slug"},"#,
                            r#" "description": {"type": "string"}, "details": {"type": "array", "items": {"type": "string"}},"#,
                            r#" "risk_level": {"type": "string", "enum": ["low", "medium", "high"]}}"#), &["action", "description"]),
            ),
            AskUser => local(
                TASK_ALL,
                "Ask the user a question when the task is unclear or the choice is theirs; waits for the answer.",
                obj(r#"{"question": {"type": "string"}}"#, &["question"]),
            ),
            SaveFile => local(
                TASK_ALL,
                "Save text (or base64 bytes) as a session file.",
                obj(concat!(r#"{"filename": {"type": "string"}, "content": {"type": "string"},"#,
                            r#" "encoding": {"type": "string", "enum": ["utf8", "base64"]}}"#), &["filename", "content"]),
            ),
            SendNotification => local(
                TASK_ALL,
                "Notify the user (Telegram and/or webhook, as configured for this session).",
                obj(r#"{"message": {"type": "string"}, "include_files": {"type": "boolean"}}"#, &["message"]),
            ).acting(),
            RequestTakeover => local(
                EVERY,
                "Ask a person to take over (a CAPTCHA, a code sent to them, a step only they can do); waits, then answers what they did.",
                obj(r#"{"reason": {"type": "string"}}"#, &["reason"]),
            ),
            FinishTask => {
                local(TASK_ALL, "End the task: the answer or what was done, and what failed.", finish_input())
            }
            // ----- stored tool outputs (added to a session once it stores one) -----
            ToolOutputsList | ToolOutputsStats | ToolOutputsExtract | ToolOutputsCount | ToolOutputsSample => {
                outputs::spec(self)
            }
            // ----- the recording: a frame after each acting step, asked by the controller -----
            BrowserRecordingFrame => browser(NO_MODEL, FRAME, frame_input()).unlisted(),
            RecordingFrame => app(FRAME, frame_input()).unlisted_for_all(),
        }
    }
}

#[cfg(test)]
mod tests;

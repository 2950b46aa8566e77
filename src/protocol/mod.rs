//! Wire types: every JSON shape that crosses a socket, for both servers.
//!
//! Requests from API clients are strict (`deny_unknown_fields`): a typo such as `instuction`
//! is a 400, not a silently ignored field. Messages from workers are tolerant: workers evolve
//! separately, and the seed's original shapes (no `worker_id`, `has_playwright`) must work.
//! Only this module and `vault` (which may only deserialize) derive serde for the wire.

pub mod domains;
pub mod end;
pub mod guards;
pub mod profiles;
pub mod refusal;
pub mod replay;
pub mod schedule;
pub mod secrets;
pub mod strict;
mod summary;
pub mod takeover;
pub mod tools;
pub mod worker;

pub use worker::{
    Command, CommandResult, DialogPolicy, RegisterRequest, RegisterResponse, SyncPolicy, UploadResponse,
    WorkerBrowserSettings, WorkerSettings,
};

pub use summary::SessionSummary;

use secrets::{Credentials, Notifications};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Explore,
    Task,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionType {
    Browser,
    App,
    Shell,
}

impl SessionType {
    /// An `http(s)://` target is a browser session, `ssh://` a shell; anything else is a
    /// desktop app.
    pub fn infer(target: &str) -> SessionType {
        let lower = target.trim().to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            SessionType::Browser
        } else if lower.starts_with("ssh://") {
            SessionType::Shell
        } else {
            SessionType::App
        }
    }

    /// The worker capability this kind of session needs.
    pub fn capability(self) -> &'static str {
        match self {
            SessionType::Browser => "browser",
            SessionType::App => "app",
            SessionType::Shell => "shell",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Waiting,
    Running,
    Confirming,
    /// Waiting for a person (`POST /pause`, `request_takeover`); a stop still ends it.
    Paused,
    Finished,
    Error,
    Stopped,
}

impl Status {
    pub fn is_active(self) -> bool {
        matches!(self, Status::Waiting | Status::Running | Status::Confirming | Status::Paused)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Waiting => "waiting",
            Status::Running => "running",
            Status::Confirming => "confirming",
            Status::Paused => "paused",
            Status::Finished => "finished",
            Status::Error => "error",
            Status::Stopped => "stopped",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// API server
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionRequest {
    pub mode: Mode,
    pub target: String,
    #[serde(default, rename = "type")]
    pub session_type: Option<SessionType>,
    #[serde(default)]
    pub instruction: Option<String>,
    #[serde(default)]
    pub goal: Option<String>,
    #[serde(default)]
    pub credentials: Option<Credentials>,
    #[serde(default)]
    pub notifications: Option<Notifications>,
    #[serde(default)]
    pub worker: Option<String>,
    /// A model endpoint by name (`api` when absent), and a model to use on it instead of its own.
    #[serde(default)]
    pub llm: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub options: Option<SessionOptionsRequest>,
    /// Input files the session waits for (each put with `PUT …/inputs/NAME`) before it starts.
    #[serde(default)]
    pub inputs: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionOptionsRequest {
    pub max_turns: Option<u32>,
    pub auto_confirm: Option<bool>,
    pub dry_run: Option<bool>,
    pub lease_timeout_s: Option<u64>,
    pub screenshot_width: Option<u32>,
    pub screenshot_quality: Option<u32>,
    pub approval: Option<Approval>,
    pub budget: Option<takeover::Budget>,
    /// `full`, `small` or `auto` (the endpoint's choice, see `config::profile`).
    pub profile: Option<guards::ProfileSetting>,
    /// Guards switched by name (`guards::Guard`); `"all": false` switches every one off first.
    pub guards: Option<std::collections::BTreeMap<String, bool>>,
    /// The hosts the browser may reach (`domains`), within config's `browser.allowed_domains`.
    pub allowed_domains: Option<Vec<String>>,
    /// A browser profile the worker keeps between sessions (`profiles::check_name`).
    #[serde(default)]
    pub browser_profile: Option<String>,
    /// A recording of the session (`GET /sessions/:id/recording`); config's `recording` when absent.
    pub recording: Option<bool>,
}

/// Who approves commands (`run_command`, `write_file`, `browser_submit_form`) before they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Nobody: they run.
    Auto,
    /// A separate short model call answers APPROVE or REJECT with a reason.
    Validator,
    /// A person, through the confirmation flow (approve, deny with a reason, or edit).
    Human,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionOptions {
    pub max_turns: u32,
    pub auto_confirm: bool,
    /// Acting tools say what they would do and do nothing (this and below: shown when set).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// How long to wait for a free capable worker before giving up (none: as long as it takes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_timeout_s: Option<u64>,
    /// Desktop screenshots for the model (the config's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_quality: Option<u32>,
    /// As asked in `POST /sessions`; absent means the default (see `SessionRecord::approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// As asked in `POST /sessions` (the profile chosen is `SessionRecord::profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<guards::ProfileSetting>,
    /// Guards switched by name for this session, as asked.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub guards: std::collections::BTreeMap<String, bool>,
    /// The hosts the browser may reach (the session's list, else the config's); in each command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<domains::DomainPattern>,
    /// The worker's browser profile the session runs in (it stays signed in); in each command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_profile: Option<String>,
    /// `Some(false)`: no recording (`GET /sessions/:id/recording`); absent: a frame per acting step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<bool>,
}

/// Screenshots a session showed the model, and what they cost.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImageStats {
    pub sent: u64,
    /// Identical to the previous frame: the model was told instead of shown.
    pub skipped: u64,
    /// Bytes of the images sent (as encoded, before base64).
    pub bytes: u64,
    /// width × height / 750 per image, the usual estimate.
    pub estimated_tokens: u64,
}

/// Which model a session runs on: the endpoint's name, its wire format, the model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LlmChoice {
    pub name: String,
    pub provider: String,
    pub model: String,
}

/// What a session will notify, without the secrets (those stay in the vault).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NotifySummary {
    pub telegram: bool,
    pub webhook: bool,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Add another call's usage; the sums saturate (a provider's figures are capped per call,
    /// a journal read back is not).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_input_tokens =
            self.cache_creation_input_tokens.saturating_add(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self.cache_read_input_tokens.saturating_add(other.cache_read_input_tokens);
    }
}

/// A question the agent put to a person.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Confirmation {
    pub confirmation_id: String,
    pub action: String,
    pub description: String,
    #[serde(default)]
    pub details: Value,
    pub risk_level: String,
}

/// A question the agent asked a person (`ask_user`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Question {
    pub question_id: String,
    pub question: String,
}

/// `session.json` and the body of `GET /sessions/:id`. Holds no secrets by construction:
/// credentials and notification targets live in the vault, never here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session_id: String,
    pub status: Status,
    pub mode: Mode,
    #[serde(rename = "type")]
    pub session_type: SessionType,
    pub target: String,
    pub instruction: Option<String>,
    pub goal: Option<String>,
    pub options: SessionOptions,
    #[serde(default)]
    pub has_credentials: bool,
    #[serde(default)]
    pub notifications: NotifySummary,
    /// The worker asked for in `POST /sessions`, if any.
    #[serde(default)]
    pub requested_worker: Option<String>,
    /// Hostname of the worker serving (or last served) this session.
    pub worker: Option<String>,
    /// The model it runs on (absent in sessions from before this field).
    #[serde(default)]
    pub llm: Option<LlmChoice>,
    pub turn: u32,
    pub max_turns: u32,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub confirmation_pending: Option<Confirmation>,
    /// Shown only while a question waits for its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_pending: Option<Question>,
    pub files: usize,
    pub usage: Usage,
    #[serde(default)]
    pub images: ImageStats,
    /// While `waiting`: the worker the session waits for, and why none is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    pub error: Option<String>,
    pub summary: Option<String>,
    /// Set on a session that replays another one's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<replay::ReplayInfo>,
    /// Set on a session a schedule made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<schedule::ScheduleMark>,
    /// A pause was asked for; the session pauses after the step in flight.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pause_requested: bool,
    /// Why the model asked a person to take over (while that pause lasts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takeover_requested: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<takeover::BudgetState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<takeover::EndedBy>,
    /// Set when the controller stopped under the session (`error` keeps the words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<end::End>,
    /// The profile the agent runs with, and why (set when the agent starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<guards::ProfileChoice>,
    /// How often each guard fired (`guards::Guard` names).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub guards_fired: std::collections::BTreeMap<String, u64>,
    /// The input files it waits for before it starts (`inputs` of `POST /sessions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
}

impl SessionRecord {
    /// The approval mode in force: the one asked for, else `validator` for explorations of a
    /// shell target (its prompt rejects anything that changes the host), `human` for shell
    /// tasks over SSH and `auto` for everything else.
    pub fn approval(&self) -> Approval {
        let shell = self.session_type == SessionType::Shell;
        self.options.approval.unwrap_or(if shell && self.mode == Mode::Explore {
            Approval::Validator
        } else if shell && self.mode == Mode::Task && is_ssh_target(&self.target) {
            Approval::Human
        } else {
            Approval::Auto
        })
    }
}

/// `ssh://user@host[:port]`: a shell session on a host reached over SSH, with no worker.
pub fn is_ssh_target(target: &str) -> bool {
    target.trim().to_ascii_lowercase().starts_with("ssh://")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    System,
    Assistant,
    Tool,
    Result,
    Confirmation,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LogEntry {
    pub seq: u64,
    pub ts: String,
    #[serde(rename = "type")]
    pub kind: LogKind,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

#[derive(Debug, Serialize)]
pub struct LogPage {
    pub entries: Vec<LogEntry>,
    pub next: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Note {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub content: String,
    pub ts: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Download,
    Generated,
    Screenshot,
    /// Handed to the session by a person (`PUT …/inputs/NAME`), kept in `inputs/`.
    Input,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileEntry {
    pub filename: String,
    pub size_kb: u64,
    #[serde(rename = "type")]
    pub kind: FileKind,
    /// Set when a new file held exactly the bytes of this stored one: it was not stored again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmationAnswer {
    pub confirmation_id: String,
    pub approved: bool,
    /// Why it was denied (the model is told).
    #[serde(default)]
    pub reason: Option<String>,
    /// Approve this command instead of the one asked about.
    #[serde(default)]
    pub edited_command: Option<String>,
}

/// `POST /sessions/:id/answer`: the text for the pending `ask_user` question.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    #[serde(default)]
    pub question_id: Option<String>,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct WorkerInfo {
    pub worker_id: String,
    pub hostname: String,
    pub capabilities: Vec<String>,
    pub connected: bool,
    pub last_seen: String,
    pub session_id: Option<String>,
}

/// Kibibytes, rounded up so a non-empty file never shows as 0.
pub fn size_kb(bytes: u64) -> u64 {
    bytes.div_ceil(1024)
}

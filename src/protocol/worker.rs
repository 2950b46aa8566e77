//! The worker server's wire: registration and its answer (the settings a worker takes from
//! the controller), one command and its result, an upload's answer. Tolerant of unknown fields
//! (workers evolve separately; the seed's shapes, `has_playwright` and no `worker_id`, still
//! work), and the policies the settings carry (dialogs; `output.sync`, shown beside them).

use super::domains;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct RegisterRequest {
    pub hostname: String,
    #[serde(default)]
    pub has_pywinauto: Option<bool>,
    #[serde(default)]
    pub has_playwright: Option<bool>,
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
    /// Ask for a secret-holding identity: every later request names `worker_id` and carries
    /// `worker_secret` (`X-Worker-Secret`). Without it (the seed's shape) the worker registers
    /// bare, while `server.legacy_workers` allows.
    #[serde(default)]
    pub use_secret: Option<bool>,
    /// The browser profiles it keeps (`options.browser_profile`).
    #[serde(default)]
    pub profiles: Option<Vec<super::profiles::ProfileReport>>,
}

impl RegisterRequest {
    /// Explicit capabilities win; otherwise the seed's flags say what the worker can drive.
    pub fn capabilities(&self) -> Vec<String> {
        let mut caps: Vec<String> = match &self.capabilities {
            Some(list) => list.iter().map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()).collect(),
            None => {
                let mut v = Vec::new();
                if self.has_playwright.unwrap_or(false) {
                    v.push("browser".to_string());
                }
                if self.has_pywinauto.unwrap_or(false) {
                    v.push("app".to_string());
                }
                v
            }
        };
        caps.sort();
        caps.dedup();
        caps
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerSettings {
    pub browser: WorkerBrowserSettings,
    pub click_delay: f64,
    pub screenshot_delay: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerBrowserSettings {
    pub headless: bool,
    pub viewport_width: u32,
    pub viewport_height: u32,
    /// Absent from older controllers: dismiss.
    #[serde(default)]
    pub dialogs: DialogPolicy,
}

/// How a page's `confirm()` and `prompt()` are answered when the model said nothing first
/// (`browser_answer_dialog`). Alerts and leave-page prompts are always accepted: an alert has
/// only OK, and leaving is what the model asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DialogPolicy {
    Accept,
    #[default]
    Dismiss,
}

/// How durable the session files' appended lines are (`output.sync`). Every line reaches the
/// kernel when it is appended, so a killed daemon loses nothing in any mode; this is about power
/// loss: `always` fdatasyncs each line, `batch` within 200 ms and before a final status, `off`
/// leaves it to the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncPolicy {
    Always,
    #[default]
    Batch,
    Off,
}

impl SyncPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncPolicy::Always => "always",
            SyncPolicy::Batch => "batch",
            SyncPolicy::Off => "off",
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct RegisterResponse {
    pub success: bool,
    pub message: String,
    pub worker_id: String,
    /// Sent as `X-Worker-Secret` by every request naming `worker_id`.
    #[serde(default)]
    pub worker_secret: String,
    pub config: WorkerSettings,
}

/// One unit of work for a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Command {
    pub id: String,
    pub action: String,
    pub params: Value,
    pub session_id: String,
    /// How long the controller waits for the result; a worker should not work past it.
    #[serde(default)]
    pub timeout_s: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<domains::DomainPattern>,
    /// The browser profile the session runs in (kept by the worker between sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_profile: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct CommandResult {
    pub id: String,
    pub success: bool,
    /// Kept as the text sent: the controller parses it (`exec::Answer::from_raw`), a large
    /// member of it staying text.
    #[serde(default)]
    pub data: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    pub error: Option<String>,
    /// The worker's browser profiles now, when they changed (a session ran in one).
    #[serde(default)]
    pub profiles: Option<Vec<super::profiles::ProfileReport>>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct UploadResponse {
    pub success: bool,
    pub stored_as: String,
    pub size_kb: u64,
}

/// A sign-in form, as `perform_login` fills it and a snapshot's `sign_in` says it: a form with a
/// password field and no list, long text or field marked as a new password. A narrow rule, on
/// purpose: a survey with a list that asks for the account's password is not one, and neither
/// is a real sign-in form with a list in it (credentials that name their fields still work).
pub const SIGN_IN_FORM: &str =
    "form:has(input[type=password]):not(:has(select, textarea, [autocomplete=new-password]))";

/// What a `read_file` of a missing path sent with `same_name: true` (the controller's
/// `same_name_read` unit) says, on the worker and over SSH alike: the only file of its name
/// below the nearest folder that exists is read and said in the answer's `note`; none or several
/// are said in the error.
pub mod same_name {
    /// Files of the name looked for at most (enough to tell one from several, and to name them).
    pub const MATCHES: usize = 5;

    pub fn read_instead(asked: &str, found: &str, below: &str) -> String {
        format!("`{asked}` does not exist: this is `{found}`, the only file of that name below `{below}`")
    }

    pub fn none_below(below: &str) -> String {
        format!("no file of that name under {below} either; to create it, call write_file")
    }

    pub fn several(found: &[String]) -> String {
        let quoted: Vec<String> = found.iter().map(|p| format!("`{p}`")).collect();
        format!("a file of that name is at: {} (use that path)", quoted.join(", "))
    }
}

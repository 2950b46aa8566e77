//! `config.yaml`: every key with its default, validation, and secrets from the environment.
//!
//! An unknown key or a bad value is a start-up error that names the key (`server.api_port`),
//! never a silent default. Secrets (`api.api_key`, `server.api_token`, `server.worker_token`)
//! may come from the environment instead of the file and are held as `Secret`s.

mod access;
mod llm;
mod price;
pub mod profile;
mod show;
pub mod suffixes;

pub use access::{ENV_API_TOKEN, ENV_WORKER_TOKEN, MIN_TOKEN_CHARS};
pub use llm::{ApiConfig, DEFAULT_LLM, Endpoint, ProviderConfig, ToolMode, Vision, Wire};
pub use price::Price;

use crate::protocol::takeover::Budget;
use crate::util::secret::Secret;
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub api: ApiConfig,
    pub providers: llm::Providers,
    pub server: ServerConfig,
    pub exploration: ExplorationConfig,
    pub task: TaskConfig,
    pub agent: AgentConfig,
    pub screenshot: ScreenshotConfig,
    pub ssh: SshConfig,
    pub browser: BrowserConfig,
    pub files: FilesConfig,
    pub output: OutputConfig,
    pub logging: LoggingConfig,
    pub notifications: NotificationsConfig,
    /// Scheduled sessions, each in `POST /schedules`'s shape (checked at start by `schedule/`).
    pub schedules: Vec<serde_json::Value>,
    /// A recording of every browser and desktop session (`GET /sessions/:id/recording`);
    /// unset = on. A session's `options.recording` overrides it.
    pub recording: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub host: String,
    pub api_port: u16,
    pub worker_port: u16,
    pub api_token: Secret,
    pub worker_token: Secret,
    pub api_threads: usize,
    pub worker_threads: usize,
    pub long_poll_s: u64,
    pub worker_timeout_s: u64,
    /// Bare worker requests (the seed's, no `worker_id`); unset = on for a loopback bind only.
    pub legacy_workers: Option<bool>,
    /// Active sessions at most (more are refused 503); 0 = no cap.
    pub max_sessions: usize,
    /// Registered workers at most; 0 = no cap.
    pub max_workers: usize,
    /// Schedules at most (config.yaml's and the API's); 0 = no cap.
    pub max_schedules: usize,
    /// The shortest time between a schedule's runs (`every`, or a `cron` expression's), in seconds.
    pub schedule_min_interval_s: u64,
    /// The longest one write to a client may block (a client that stops reading); 0 = 30 s
    /// past the longest long poll (`long_poll_s`, and the API's 60 s log polls).
    pub io_timeout_s: u64,
    /// Open connections per port at most; at the cap the longest-idle one makes room. 4096 by
    /// default: 2 000 long-polling workers hold one worker-port connection each.
    pub max_connections: usize,
    /// Seconds a request head may take from its first byte (from the accept, for the first).
    pub header_timeout_s: u64,
    /// Seconds one read of a request body may wait.
    pub read_timeout_s: u64,
    /// HTTPS on both ports: a PEM certificate chain and its private key ("" = plain HTTP).
    pub tls_cert: PathBuf,
    pub tls_key: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExplorationConfig {
    pub max_turns: u32,
    pub click_delay: f64,
    pub screenshot_delay: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskConfig {
    pub max_turns: u32,
    pub confirmation_timeout: u64,
    pub command_timeout_s: u64,
    pub download_timeout_s: u64,
    /// How long a pause waits for a person (0 = `confirmation_timeout`).
    pub takeover_timeout_s: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    pub keep_screenshots: usize,
    pub max_tool_output_chars: usize,
    /// The longest page snapshot the worker returns, in characters.
    pub snapshot_chars: usize,
    /// Compact the model's working context when a request would pass this many tokens
    /// (estimated, scaled by the server's last count); 0 = 70 % of the context window.
    pub compact_at_tokens: u64,
    /// The model's context window; 0 = its provider's usual (Anthropic 200 000, OpenAI-compatible
    /// 128 000, Gemini 1 000 000).
    pub context_window_tokens: u64,
    /// Steps (a call and its result) kept verbatim when compacting.
    pub keep_recent_steps: usize,
    /// What a session may spend unless `POST /sessions` says otherwise (none by default).
    pub budget: Budget,
    /// Guards switched by name (`protocol::guards`): `NAME: false` turns one off in every profile,
    /// `NAME: true` on in every profile.
    pub guards: std::collections::BTreeMap<String, bool>,
    /// Eval only: set by `agent-controller eval --no-boundary`, never read from a file, a
    /// session's options or the API: the target's text reaches the model without markers.
    #[serde(skip)]
    pub eval_no_boundary: bool,
}

/// Shell sessions over SSH (`ssh://user@host[:port]` targets).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SshConfig {
    /// The private key to log in with ("" = ssh's own defaults and agent).
    pub identity_file: PathBuf,
    /// The controller's own known hosts ("" = `known_hosts` in `output.dir`).
    pub known_hosts: PathBuf,
    pub connect_timeout_s: u64,
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig { identity_file: PathBuf::new(), known_hosts: PathBuf::new(), connect_timeout_s: 10 }
    }
}

/// What desktop screenshots look like to the model (sessions may override both).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScreenshotConfig {
    /// Downscaled to this width (aspect kept, never enlarged); coordinates are in its space.
    pub width: u32,
    /// JPEG quality.
    pub quality: u32,
}

impl Default for ScreenshotConfig {
    fn default() -> Self {
        ScreenshotConfig { width: 1280, quality: 70 }
    }
}

/// The accepted ranges, for the config and for per-session overrides alike.
pub const SCREENSHOT_WIDTHS: std::ops::RangeInclusive<u32> = 320..=3840;
pub const SCREENSHOT_QUALITIES: std::ops::RangeInclusive<u32> = 10..=95;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserConfig {
    pub headless: bool,
    pub viewport_width: u32,
    pub viewport_height: u32,
    pub dialogs: crate::protocol::DialogPolicy,
    /// The hosts every session's browser may reach (empty: any); a session may narrow it.
    pub allowed_domains: Vec<crate::protocol::domains::DomainPattern>,
    /// The Public Suffix List a wildcard is checked against (`suffixes.rs`).
    pub public_suffix_list: std::path::PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    pub max_file_size_mb: u64,
    pub max_session_storage_mb: u64,
    pub max_files_per_session: usize,
    /// Under `validator` or `human` approval, a download larger than this is approved first
    /// (0 = never asked).
    pub approve_downloads_over_mb: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    pub dir: PathBuf,
    /// Finished sessions older than this many days are deleted (0 = kept for ever).
    pub retain_days: u64,
    /// Past this total, the oldest finished sessions are deleted (0 = no cap).
    pub max_total_mb: u64,
    /// How appended lines reach the disk (journal, log, steps): see `SyncPolicy`.
    pub sync: crate::protocol::SyncPolicy,
}

/// How the controller reaches notification services (the targets come per session).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotificationsConfig {
    pub telegram_base_url: String,
    pub timeout_s: u64,
    /// Webhooks to private, loopback and link-local addresses allowed.
    pub allow_private: bool,
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        NotificationsConfig {
            telegram_base_url: "https://api.telegram.org".into(),
            timeout_s: 10,
            allow_private: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingConfig {
    pub level: String,
    pub file: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "127.0.0.1".into(),
            api_port: 5900,
            worker_port: 5901,
            api_token: Secret::default(),
            worker_token: Secret::default(),
            api_threads: 8,
            worker_threads: 8,
            long_poll_s: 20,
            worker_timeout_s: 60,
            legacy_workers: None,
            max_sessions: 256,
            max_workers: 1024,
            max_schedules: 100,
            schedule_min_interval_s: 60,
            io_timeout_s: 0,
            max_connections: 4096,
            header_timeout_s: 10,
            read_timeout_s: 30,
            tls_cert: PathBuf::new(),
            tls_key: PathBuf::new(),
        }
    }
}

impl Default for ExplorationConfig {
    fn default() -> Self {
        ExplorationConfig { max_turns: 50, click_delay: 1.0, screenshot_delay: 0.5 }
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            max_turns: 200,
            confirmation_timeout: 300,
            command_timeout_s: 120,
            download_timeout_s: 900,
            takeover_timeout_s: 0,
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            keep_screenshots: 3,
            max_tool_output_chars: 20_000,
            snapshot_chars: 8000,
            compact_at_tokens: 0,
            context_window_tokens: 0,
            keep_recent_steps: 5,
            budget: Budget::default(),
            guards: Default::default(),
            eval_no_boundary: false,
        }
    }
}

impl Default for BrowserConfig {
    fn default() -> Self {
        // Without a display there is nowhere to show a window.
        BrowserConfig {
            headless: std::env::var_os("DISPLAY").is_none(),
            viewport_width: 1280,
            viewport_height: 720,
            dialogs: crate::protocol::DialogPolicy::Dismiss,
            allowed_domains: Vec::new(),
            public_suffix_list: suffixes::DEFAULT_LIST.into(),
        }
    }
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig {
            max_file_size_mb: 500,
            max_session_storage_mb: 5000,
            max_files_per_session: 1000,
            approve_downloads_over_mb: 100,
        }
    }
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            dir: PathBuf::from("./output"),
            retain_days: 0,
            max_total_mb: 0,
            sync: crate::protocol::SyncPolicy::Batch,
        }
    }
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig { level: "info".into(), file: String::new() }
    }
}

/// A start-up error. `key` names the offending config key when there is one.
#[derive(Debug)]
pub struct ConfigError {
    pub key: Option<String>,
    pub message: String,
}

impl ConfigError {
    pub(crate) fn key(key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError { key: Some(key.to_string()), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "config key `{key}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Parse YAML text. An empty document is all defaults.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        if text.trim().is_empty() || text.lines().all(|l| l.trim_start().starts_with('#') || l.trim().is_empty()) {
            return Ok(Config::default());
        }
        serde_yaml::from_str::<Config>(text).map_err(|e| {
            let msg = e.to_string();
            // yaml_serde prefixes the path ("server.api_port: invalid type…"); lift it out so
            // the message always starts with the key.
            match msg.split_once(": ") {
                Some((path, rest)) if is_key_path(path) => ConfigError::key(path, rest),
                _ => ConfigError { key: None, message: format!("config.yaml: {msg}") },
            }
        })
    }

    /// The file `--config` named (which must exist), else `config.yaml`, and what `load` made of it.
    pub fn load_named(named: Option<PathBuf>) -> (PathBuf, Result<Config, ConfigError>) {
        let path = named.clone().unwrap_or_else(|| PathBuf::from("config.yaml"));
        (path.clone(), Config::load(&path, named.is_some()))
    }

    /// Read the file (a missing file is an error when it was asked for by name) and apply the
    /// environment. The caller validates once command-line overrides are in.
    pub fn load(path: &Path, required: bool) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => String::new(),
            Err(e) => {
                return Err(ConfigError { key: None, message: format!("cannot read {}: {e}", path.display()) });
            }
        };
        let mut config = Config::from_yaml(&text)?;
        config.apply_env(|name| std::env::var(name).ok());
        Ok(config)
    }

    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        self.apply_llm_env(&get);
        let nonempty = |name: &str| get(name).filter(|v| !v.is_empty()).map(Secret::new);
        if let Some(v) = nonempty(ENV_API_TOKEN) {
            self.server.api_token = v;
        }
        if let Some(v) = nonempty(ENV_WORKER_TOKEN) {
            self.server.worker_token = v;
        }
    }

    /// Values serde accepts but the daemon cannot run with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_api_and_server()?;
        self.validate_limits()?;
        self.validate_the_rest()
    }

    fn validate_api_and_server(&self) -> Result<(), ConfigError> {
        self.validate_llm()?;
        if self.server.host.parse::<IpAddr>().is_err() && self.server.host != "localhost" {
            return Err(ConfigError::key(
                "server.host",
                format!("{:?} is not an IP address (use 127.0.0.1, 0.0.0.0, ::1 …)", self.server.host),
            ));
        }
        for (key, n) in
            [("server.api_threads", self.server.api_threads), ("server.worker_threads", self.server.worker_threads)]
        {
            if n == 0 || n > 256 {
                return Err(ConfigError::key(key, "must be between 1 and 256"));
            }
        }
        Ok(())
    }

    /// Tokens, ports and the timeouts, which must fit each other.
    fn validate_limits(&self) -> Result<(), ConfigError> {
        if let Some(why) = self.agent.budget.invalid() {
            return Err(ConfigError::key("agent.budget", why));
        }
        if let Some(name) = self.agent.guards.keys().find(|n| crate::protocol::guards::Guard::from_name(n).is_none()) {
            return Err(ConfigError::key(&format!("agent.guards.{name}"), "no such guard (README lists them)"));
        }
        // A shared token would let every worker drive the API (and read every session).
        if !self.server.api_token.is_empty() && self.server.api_token.expose() == self.server.worker_token.expose() {
            return Err(ConfigError::key("server.worker_token", "must differ from server.api_token"));
        }
        self.validate_token_lengths()?;
        self.validate_tls()?;
        if self.server.api_port != 0 && self.server.api_port == self.server.worker_port {
            return Err(ConfigError::key("server.worker_port", "must differ from server.api_port"));
        }
        positive("server.long_poll_s", self.server.long_poll_s)?;
        positive("server.header_timeout_s", self.server.header_timeout_s)?;
        positive("server.read_timeout_s", self.server.read_timeout_s)?;
        at_most("server.header_timeout_s", self.server.header_timeout_s, 300)?;
        at_most("server.read_timeout_s", self.server.read_timeout_s, 3_600)?;
        if !(1..=100_000).contains(&self.server.max_connections) {
            return Err(ConfigError::key("server.max_connections", "must be between 1 and 100000"));
        }
        positive("server.worker_timeout_s", self.server.worker_timeout_s)?;
        at_most("server.long_poll_s", self.server.long_poll_s, 300)?;
        at_most("server.worker_timeout_s", self.server.worker_timeout_s, 86_400)?;
        at_most("task.confirmation_timeout", self.task.confirmation_timeout, 7 * 86_400)?;
        at_most("task.command_timeout_s", self.task.command_timeout_s, 86_400)?;
        at_most("task.download_timeout_s", self.task.download_timeout_s, 7 * 86_400)?;
        at_most("api.timeout_s", self.api.timeout_s, 3_600)?;
        at_most("notifications.timeout_s", self.notifications.timeout_s, 300)?;
        at_most("files.max_file_size_mb", self.files.max_file_size_mb, 1024 * 1024)?;
        if self.server.io_timeout_s != 0 && self.server.io_timeout_s <= self.server.long_poll_s {
            return Err(ConfigError::key(
                "server.io_timeout_s",
                "must be longer than server.long_poll_s, or parked polls would lose their connection",
            ));
        }
        if self.server.long_poll_s >= self.server.worker_timeout_s {
            return Err(ConfigError::key(
                "server.long_poll_s",
                "must be shorter than server.worker_timeout_s, or idle workers would look silent",
            ));
        }
        Ok(())
    }

    /// Where host keys of SSH targets are kept.
    pub fn known_hosts_path(&self) -> PathBuf {
        if self.ssh.known_hosts.as_os_str().is_empty() {
            self.output.dir.join("known_hosts")
        } else {
            self.ssh.known_hosts.clone()
        }
    }

    fn validate_the_rest(&self) -> Result<(), ConfigError> {
        suffixes::check_wildcards(&self.browser.allowed_domains, &self.browser.public_suffix_list)
            .map_err(|why| ConfigError::key("browser.allowed_domains", &why))?;
        positive("ssh.connect_timeout_s", self.ssh.connect_timeout_s)?;
        at_most("ssh.connect_timeout_s", self.ssh.connect_timeout_s, 300)?;
        if !SCREENSHOT_WIDTHS.contains(&self.screenshot.width) {
            return Err(ConfigError::key("screenshot.width", "must be between 320 and 3840"));
        }
        if !SCREENSHOT_QUALITIES.contains(&self.screenshot.quality) {
            return Err(ConfigError::key("screenshot.quality", "must be between 10 and 95"));
        }
        positive("exploration.max_turns", self.exploration.max_turns.into())?;
        for (key, v) in [
            ("exploration.click_delay", self.exploration.click_delay),
            ("exploration.screenshot_delay", self.exploration.screenshot_delay),
        ] {
            if !(0.0..=60.0).contains(&v) {
                return Err(ConfigError::key(key, "must be between 0 and 60 seconds"));
            }
        }
        positive("task.max_turns", self.task.max_turns.into())?;
        positive("task.confirmation_timeout", self.task.confirmation_timeout)?;
        positive("task.command_timeout_s", self.task.command_timeout_s)?;
        positive("task.download_timeout_s", self.task.download_timeout_s)?;
        positive("agent.max_tool_output_chars", self.agent.max_tool_output_chars as u64)?;
        if !(500..=100_000).contains(&self.agent.snapshot_chars) {
            return Err(ConfigError::key("agent.snapshot_chars", "must be between 500 and 100000"));
        }
        positive("browser.viewport_width", self.browser.viewport_width.into())?;
        positive("browser.viewport_height", self.browser.viewport_height.into())?;
        positive("files.max_file_size_mb", self.files.max_file_size_mb)?;
        positive("files.max_session_storage_mb", self.files.max_session_storage_mb)?;
        positive("files.max_files_per_session", self.files.max_files_per_session as u64)?;
        if !(self.notifications.telegram_base_url.starts_with("http://")
            || self.notifications.telegram_base_url.starts_with("https://"))
        {
            return Err(ConfigError::key("notifications.telegram_base_url", "must start with http:// or https://"));
        }
        positive("notifications.timeout_s", self.notifications.timeout_s)?;
        if self.output.dir.as_os_str().is_empty() {
            return Err(ConfigError::key("output.dir", "must not be empty"));
        }
        if self.log_level().is_none() {
            return Err(ConfigError::key(
                "logging.level",
                format!("unknown level {:?}; expected off, error, warn, info, debug or trace", self.logging.level),
            ));
        }
        Ok(())
    }

    pub fn log_level(&self) -> Option<log::LevelFilter> {
        match self.logging.level.to_ascii_lowercase().as_str() {
            "off" => Some(log::LevelFilter::Off),
            "error" => Some(log::LevelFilter::Error),
            "warn" | "warning" => Some(log::LevelFilter::Warn),
            "info" => Some(log::LevelFilter::Info),
            "debug" => Some(log::LevelFilter::Debug),
            "trace" => Some(log::LevelFilter::Trace),
            _ => None,
        }
    }

    /// Only this machine can connect.
    pub fn binds_loopback(&self) -> bool {
        self.server.host == "localhost"
            || self.server.host.parse::<IpAddr>().map(|ip| ip.is_loopback()).unwrap_or(false)
    }

    /// How long a pause waits for a person.
    pub fn takeover_timeout_s(&self) -> u64 {
        if self.task.takeover_timeout_s == 0 { self.task.confirmation_timeout } else { self.task.takeover_timeout_s }
    }

    pub fn max_file_bytes(&self) -> u64 {
        self.files.max_file_size_mb.saturating_mul(1024 * 1024)
    }

    pub fn max_session_bytes(&self) -> u64 {
        self.files.max_session_storage_mb.saturating_mul(1024 * 1024)
    }
}

fn is_key_path(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '[' || c == ']')
}

pub(crate) fn positive(key: &str, v: u64) -> Result<(), ConfigError> {
    if v == 0 { Err(ConfigError::key(key, "must be greater than 0")) } else { Ok(()) }
}

fn at_most(key: &str, v: u64, max: u64) -> Result<(), ConfigError> {
    if v > max { Err(ConfigError::key(key, format!("must be at most {max}"))) } else { Ok(()) }
}

#[cfg(test)]
mod tests;

//! Checking a `POST /sessions` body: every rule a request must meet, the defaults it gets,
//! and the split of what it carries into a record (written to disk) and a vault (memory only).

use super::error::SessionError;
use crate::config::{BrowserConfig, Config, DEFAULT_LLM, SCREENSHOT_QUALITIES, SCREENSHOT_WIDTHS};
use crate::hub::WorkerHub;
use crate::protocol::domains::DomainPattern;
use crate::protocol::guards::Guard;
use crate::protocol::secrets::{Credentials, Notifications};
use crate::protocol::takeover::{Budget, BudgetState, Spent};
use crate::protocol::*;
use crate::vault::{MIN_SECRET_CHARS, Vault};

/// Validated input for a new session, secrets split off into the vault.
pub struct NewSession {
    pub record: SessionRecord,
    pub vault: Vault,
    /// Called once with the final record when the session's thread has recorded its end.
    pub on_end: Option<super::EndHook>,
}

/// Check a `POST /sessions` body and split it into a record and a vault.
pub fn validate(req: CreateSessionRequest, config: &Config, hub: &WorkerHub) -> Result<NewSession, SessionError> {
    let bad = |m: &str| Err(SessionError::Invalid(m.to_string()));
    let target = req.target.trim().to_string();
    if target.is_empty() {
        return bad("`target` must not be empty");
    }
    if target.len() > 4096 {
        return bad("`target` is longer than 4096 characters");
    }
    let instruction = req.instruction.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if req.mode == Mode::Task && instruction.is_none() {
        return bad("a task session needs an `instruction`");
    }
    let goal = req.goal.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let session_type = req.session_type.unwrap_or_else(|| SessionType::infer(&target));
    let options = req.options.unwrap_or_default();
    let default_turns = match req.mode {
        Mode::Explore => config.exploration.max_turns,
        Mode::Task => config.task.max_turns,
    };
    let max_turns = options.max_turns.unwrap_or(default_turns);
    if !(1..=10_000).contains(&max_turns) {
        return bad("`options.max_turns` must be between 1 and 10000");
    }
    check_options(&options, session_type)?;
    let allowed_domains = allowed_domains(options.allowed_domains.as_deref(), &config.browser)?;
    check_secrets(req.credentials.as_ref(), req.notifications.as_ref())?;
    check_credential_site(req.credentials.as_ref(), &config.browser)?;
    if is_ssh_target(&target) {
        if session_type != SessionType::Shell {
            return bad("an ssh:// target is for `type: shell` sessions");
        }
        target.parse::<crate::exec::ssh::SshTarget>().map_err(|e| SessionError::Invalid(e.to_string()))?;
    }
    let requested_worker = req.worker.map(|w| w.trim().to_string()).filter(|w| !w.is_empty());
    if let Some(name) = &requested_worker {
        check_worker(hub, name, session_type)?;
    }
    let llm = choose_llm(config, req.llm.as_deref(), req.model.as_deref())?;
    let budget = choose_budget(config, options.budget, &llm)?;
    let notifications = notify_summary(req.notifications.as_ref());
    let record = SessionRecord {
        session_id: String::new(),
        status: Status::Waiting,
        mode: req.mode,
        session_type,
        target,
        instruction,
        goal,
        options: SessionOptions { allowed_domains, ..session_options(&options, max_turns, config.recording) },
        has_credentials: req.credentials.is_some(),
        notifications,
        requested_worker,
        worker: None,
        llm: Some(llm),
        turn: 0,
        max_turns,
        created_at: String::new(),
        finished_at: None,
        confirmation_pending: None,
        question_pending: None,
        files: 0,
        usage: Usage::default(),
        images: ImageStats::default(),
        waiting_for: None,
        error: None,
        summary: None,
        replay: None,
        schedule: None,
        pause_requested: false,
        takeover_requested: None,
        budget,
        ended_by: None,
        end: None,
        profile: None,
        guards_fired: Default::default(),
        inputs: check_inputs(req.inputs.unwrap_or_default())?,
    };
    Ok(NewSession { record, vault: Vault::new(req.credentials, req.notifications), on_end: None })
}

/// Which notification targets a session has (the record shows no more).
fn notify_summary(n: Option<&Notifications>) -> NotifySummary {
    NotifySummary { telegram: n.is_some_and(|n| n.telegram.is_some()), webhook: n.is_some_and(|n| n.webhook.is_some()) }
}

/// The input files a session waits for: safe names, each once, at most 100.
fn check_inputs(names: Vec<String>) -> Result<Vec<String>, SessionError> {
    if names.len() > 100 {
        return Err(SessionError::Invalid("`inputs`: at most 100 files".into()));
    }
    for (i, name) in names.iter().enumerate() {
        crate::protocol::profiles::check_input_name(name)
            .map_err(|m| SessionError::Invalid(format!("`inputs`: {m}")))?;
        if names[..i].contains(name) {
            return Err(SessionError::Invalid(format!("`inputs`: {name:?} is named twice")));
        }
    }
    Ok(names)
}

/// A credential bound to a wildcard (`credentials.domain`) is bound to one site's hosts, not to
/// everything under a public suffix.
fn check_credential_site(credentials: Option<&Credentials>, browser: &BrowserConfig) -> Result<(), SessionError> {
    let Some(domain) = credentials.and_then(|c| c.domain.as_deref()) else { return Ok(()) };
    let Ok(pattern) = DomainPattern::parse(domain) else { return Ok(()) };
    crate::config::suffixes::check_wildcards([&pattern], &browser.public_suffix_list)
        .map_err(|why| SessionError::Invalid(format!("`credentials.domain`: {why}")))
}

/// Credentials and notification targets must be usable (their values are never echoed).
pub fn check_secrets(
    credentials: Option<&Credentials>,
    notifications: Option<&Notifications>,
) -> Result<(), SessionError> {
    let bad = |m: &str| SessionError::Invalid(m.to_string());
    if let Some(c) = credentials {
        if c.username.is_empty() || c.password.is_empty() {
            return Err(bad("`credentials` need a non-empty `username` and `password`"));
        }
        if let Some(domain) = &c.domain {
            DomainPattern::parse(domain).map_err(|e| SessionError::Invalid(format!("`credentials.domain`: {e}")))?;
        }
        too_short("credentials.password", c.password.expose())?;
        if let Some(totp) = &c.totp {
            crate::util::totp::Totp::parse(totp.expose())
                .map_err(|e| SessionError::Invalid(format!("`credentials.totp`: {e}")))?;
        }
    }
    if let Some(n) = notifications {
        if let Some(t) = &n.telegram {
            if t.bot_token.is_empty() || t.chat_id.trim().is_empty() {
                return Err(bad("`notifications.telegram` needs `bot_token` and `chat_id`"));
            }
            too_short("notifications.telegram.bot_token", t.bot_token.expose())?;
        }
        if let Some(w) = &n.webhook {
            let url = w.url.expose();
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
                return Err(bad("`notifications.webhook.url` must be an http:// or https:// URL"));
            }
            if let Some(m) = &w.method {
                if !m.eq_ignore_ascii_case("POST") && !m.eq_ignore_ascii_case("PUT") {
                    return Err(bad("`notifications.webhook.method` must be POST or PUT"));
                }
            }
        }
    }
    Ok(())
}

/// A secret too short to scrub from output (it would match inside ordinary words) is refused.
fn too_short(key: &str, value: &str) -> Result<(), SessionError> {
    if value.chars().count() < MIN_SECRET_CHARS {
        return Err(SessionError::Invalid(format!(
            "`{key}` is shorter than {MIN_SECRET_CHARS} characters: a secret that short cannot be scrubbed \
             from logs and model context; use a longer one"
        )));
    }
    Ok(())
}

/// A worker asked for by name must be registered and able to run this kind of session.
fn check_worker(hub: &WorkerHub, name: &str, session_type: SessionType) -> Result<(), SessionError> {
    let worker = hub
        .find(name)
        .ok_or_else(|| SessionError::Invalid(format!("no worker {name:?} has registered (GET /workers lists them)")))?;
    let cap = session_type.capability();
    if !worker.capabilities().iter().any(|c| c == cap) {
        return Err(SessionError::Invalid(format!(
            "worker {name:?} cannot run {cap} sessions (capabilities: {})",
            worker.capabilities().join(", ")
        )));
    }
    Ok(())
}

/// The endpoint asked for (`api` by default) must exist; a model name may replace its own.
fn choose_llm(config: &Config, name: Option<&str>, model: Option<&str>) -> Result<LlmChoice, SessionError> {
    let name = name.map(str::trim).filter(|n| !n.is_empty()).unwrap_or(DEFAULT_LLM);
    let endpoint = config.endpoint(name).ok_or_else(|| {
        SessionError::Invalid(format!("unknown `llm` {name:?}; known: {}", config.llm_names().join(", ")))
    })?;
    let model = match model.map(str::trim) {
        Some(m) if m.is_empty() || m.len() > 200 || m.chars().any(char::is_control) => {
            return Err(SessionError::Invalid("`model` must be a model name of at most 200 characters".into()));
        }
        Some(m) => m.to_string(),
        None => endpoint.model,
    };
    Ok(LlmChoice { name: endpoint.name, provider: endpoint.wire.name().to_string(), model })
}

/// The budget asked for, each limit defaulting to `agent.budget`'s; a `usd` limit needs a price
/// for the session's model.
fn choose_budget(config: &Config, asked: Option<Budget>, llm: &LlmChoice) -> Result<Option<BudgetState>, SessionError> {
    let limit = asked.unwrap_or_default().or(config.agent.budget);
    if limit.is_empty() {
        return Ok(None);
    }
    if let Some(why) = limit.invalid() {
        return Err(SessionError::Invalid(format!("`options.{why}`")));
    }
    let priced = config.price(&llm.name, &llm.model).is_some();
    if limit.usd.is_some() && !priced {
        let key =
            if llm.name == DEFAULT_LLM { "api.price".to_string() } else { format!("providers.{}.price", llm.name) };
        return Err(SessionError::Invalid(format!(
            "a `usd` budget needs the price of model {:?}: none is known for it; set `{key}` \
             ({{input_per_mtok, output_per_mtok, cache_read_per_mtok}})",
            llm.model
        )));
    }
    let spent = Spent { usd: priced.then_some(0.0), ..Spent::default() };
    Ok(Some(BudgetState { limit, spent, exceeded: None }))
}

/// The options as asked; `recording` the config's when not asked, and kept only when off.
fn session_options(options: &SessionOptionsRequest, max_turns: u32, recording: Option<bool>) -> SessionOptions {
    SessionOptions {
        max_turns,
        auto_confirm: options.auto_confirm.unwrap_or(false),
        dry_run: options.dry_run.unwrap_or(false),
        lease_timeout_s: options.lease_timeout_s,
        screenshot_width: options.screenshot_width,
        screenshot_quality: options.screenshot_quality,
        approval: options.approval,
        profile: options.profile,
        guards: options.guards.clone().unwrap_or_default(),
        allowed_domains: Vec::new(),
        browser_profile: options.browser_profile.clone(),
        recording: options.recording.or(recording).filter(|on| !on),
    }
}

/// The session's allow-list: its own, which may narrow the config's but not widen it, else
/// the config's.
fn allowed_domains(asked: Option<&[String]>, browser: &BrowserConfig) -> Result<Vec<DomainPattern>, SessionError> {
    let config = &browser.allowed_domains;
    let Some(asked) = asked else { return Ok(config.to_vec()) };
    let bad = |m: String| SessionError::Invalid(format!("`options.allowed_domains`: {m}"));
    if asked.len() > 100 {
        return Err(bad("at most 100 patterns".into()));
    }
    let parsed =
        asked.iter().map(|p| DomainPattern::parse(p)).collect::<Result<Vec<_>, _>>().map_err(|e| bad(e.to_string()))?;
    if parsed.is_empty() && !config.is_empty() {
        return Err(bad("an empty list would lift config.yaml's `browser.allowed_domains`".into()));
    }
    if let Some(wider) = parsed.iter().find(|p| !config.is_empty() && !config.iter().any(|c| p.within(c))) {
        return Err(bad(format!("{wider} is outside config.yaml's `browser.allowed_domains`")));
    }
    crate::config::suffixes::check_wildcards(&parsed, &browser.public_suffix_list).map_err(bad)?;
    Ok(parsed)
}

fn check_options(options: &SessionOptionsRequest, session_type: SessionType) -> Result<(), SessionError> {
    let bad = |m: &str| Err(SessionError::Invalid(m.to_string()));
    if let Some(name) = &options.browser_profile {
        crate::protocol::profiles::check_profile_name(name)
            .map_err(|m| SessionError::Invalid(format!("`options.browser_profile`: {m}")))?;
        if session_type != SessionType::Browser {
            return bad("`options.browser_profile` is for browser sessions");
        }
    }
    if options.lease_timeout_s.is_some_and(|t| !(1..=7 * 86_400).contains(&t)) {
        return bad("`options.lease_timeout_s` must be between 1 and 604800");
    }
    if options.screenshot_width.is_some_and(|w| !SCREENSHOT_WIDTHS.contains(&w)) {
        return bad("`options.screenshot_width` must be between 320 and 3840");
    }
    if options.screenshot_quality.is_some_and(|q| !SCREENSHOT_QUALITIES.contains(&q)) {
        return bad("`options.screenshot_quality` must be between 10 and 95");
    }
    let switched = options.guards.iter().flat_map(|g| g.keys());
    if let Some(name) = switched.filter(|n| *n != "all").find(|n| Guard::from_name(n).is_none()) {
        let known: Vec<&str> = Guard::ALL.iter().map(|g| g.name()).collect();
        return Err(SessionError::Invalid(format!(
            "`options.guards`: no guard {name:?}; the guards are: all, {}",
            known.join(", ")
        )));
    }
    Ok(())
}

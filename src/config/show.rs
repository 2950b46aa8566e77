//! `agent-controller config check`: the effective configuration (file, defaults and
//! environment together) written back as YAML, every secret masked.
//!
//! Invariant: no secret's value is ever written; a set secret shows as `"********"`, an unset
//! one as `""`. The output is valid YAML in `config.yaml`'s layout, and a unit test checks that
//! every key `config.yaml` documents appears in it, so a new key cannot be forgotten here.

use super::{Config, DEFAULT_LLM};
use crate::util::secret::Secret;
use std::fmt::Write;

/// A price as a YAML flow map (JSON is YAML), or null.
fn price(p: Option<super::Price>) -> String {
    p.map_or("null".to_string(), |p| {
        let read = p.cache_read_per_mtok.map_or(String::new(), |r| format!(", \"cache_read_per_mtok\": {r}"));
        format!("{{\"input_per_mtok\": {}, \"output_per_mtok\": {}{read}}}", p.input_per_mtok, p.output_per_mtok)
    })
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn masked(s: &Secret) -> String {
    if s.is_empty() { "\"\"".into() } else { "\"********\"".into() }
}

fn float(v: f64) -> String {
    format!("{v:?}")
}

/// `key: value` lines under `section:`.
fn section(out: &mut String, name: &str, items: &[(&str, String)]) {
    let _ = writeln!(out, "{name}:");
    for (key, value) in items {
        let _ = writeln!(out, "  {key}: {value}");
    }
    out.push('\n');
}

impl Config {
    /// Every key with its effective value, as YAML, secrets masked.
    pub fn effective_yaml(&self) -> String {
        let mut out =
            String::from("# the effective configuration: file, defaults and environment (secrets masked)\n\n");
        let a = &self.api;
        section(
            &mut out,
            "api",
            &[
                ("provider", quoted(&a.provider)),
                ("api_key", masked(&a.api_key)),
                ("base_url", quoted(&a.base_url)),
                ("model", quoted(&a.model)),
                ("tool_mode", quoted(&a.tool_mode)),
                ("vision", vision(a.vision)),
                ("reply_schema", vision(a.reply_schema)),
                ("temperature", a.temperature.map_or("null".to_string(), |t| t.to_string())),
                ("max_tokens", a.max_tokens.to_string()),
                ("timeout_s", a.timeout_s.to_string()),
                ("max_retries", a.max_retries.to_string()),
                ("price", price(a.price)),
                ("profile", quoted(&a.profile)),
            ],
        );
        self.write_providers(&mut out);
        self.write_server(&mut out);
        self.write_the_rest(&mut out);
        // JSON is YAML: each schedule as given, its secrets masked.
        let mut schedules = serde_json::Value::from(self.schedules.clone());
        mask_secrets(&mut schedules);
        out.push_str(&format!("schedules: {schedules}\n\n"));
        out.push_str(&format!("recording: {}\n\n", self.recording.unwrap_or(true)));
        self.write_endpoints(&mut out);
        out
    }

    fn write_providers(&self, out: &mut String) {
        if self.providers.is_empty() {
            out.push_str("providers: {}\n\n");
            return;
        }
        out.push_str("providers:\n");
        for (name, p) in &self.providers {
            let _ = writeln!(out, "  {}:", quoted(name));
            let max_tokens = p.max_tokens.map_or("null".to_string(), |n| n.to_string());
            for (key, value) in [
                ("provider", quoted(&p.provider)),
                ("base_url", quoted(&p.base_url)),
                ("model", quoted(&p.model)),
                ("api_key", masked(&p.api_key)),
                ("api_key_env", quoted(&p.api_key_env)),
                ("tool_mode", quoted(&p.tool_mode)),
                ("vision", p.vision.map_or("null".to_string(), vision)),
                ("reply_schema", p.reply_schema.map_or("null".to_string(), vision)),
                ("temperature", p.temperature.map_or("null".to_string(), |t| t.to_string())),
                ("max_tokens", max_tokens),
                ("price", price(p.price)),
                ("profile", quoted(&p.profile)),
            ] {
                let _ = writeln!(out, "    {key}: {value}");
            }
        }
        out.push('\n');
    }

    fn write_server(&self, out: &mut String) {
        let s = &self.server;
        section(
            out,
            "server",
            &[
                ("host", quoted(&s.host)),
                ("api_port", s.api_port.to_string()),
                ("worker_port", s.worker_port.to_string()),
                ("api_token", masked(&s.api_token)),
                ("worker_token", masked(&s.worker_token)),
                ("api_threads", s.api_threads.to_string()),
                ("worker_threads", s.worker_threads.to_string()),
                ("long_poll_s", s.long_poll_s.to_string()),
                ("worker_timeout_s", s.worker_timeout_s.to_string()),
                ("legacy_workers", s.legacy_workers.map_or("null".into(), |b| b.to_string())),
                ("max_sessions", s.max_sessions.to_string()),
                ("max_workers", s.max_workers.to_string()),
                ("max_schedules", s.max_schedules.to_string()),
                ("schedule_min_interval_s", s.schedule_min_interval_s.to_string()),
                ("io_timeout_s", s.io_timeout_s.to_string()),
                ("max_connections", s.max_connections.to_string()),
                ("header_timeout_s", s.header_timeout_s.to_string()),
                ("read_timeout_s", s.read_timeout_s.to_string()),
                ("tls_cert", quoted(&s.tls_cert.display().to_string())),
                ("tls_key", quoted(&s.tls_key.display().to_string())),
            ],
        );
    }

    fn write_the_rest(&self, out: &mut String) {
        let (e, t) = (&self.exploration, &self.task);
        section(
            out,
            "exploration",
            &[
                ("max_turns", e.max_turns.to_string()),
                ("click_delay", float(e.click_delay)),
                ("screenshot_delay", float(e.screenshot_delay)),
            ],
        );
        section(
            out,
            "task",
            &[
                ("max_turns", t.max_turns.to_string()),
                ("confirmation_timeout", t.confirmation_timeout.to_string()),
                ("command_timeout_s", t.command_timeout_s.to_string()),
                ("download_timeout_s", t.download_timeout_s.to_string()),
                ("takeover_timeout_s", t.takeover_timeout_s.to_string()),
            ],
        );
        let ag = &self.agent;
        section(
            out,
            "agent",
            &[
                ("keep_screenshots", ag.keep_screenshots.to_string()),
                ("max_tool_output_chars", ag.max_tool_output_chars.to_string()),
                ("snapshot_chars", ag.snapshot_chars.to_string()),
                ("compact_at_tokens", ag.compact_at_tokens.to_string()),
                ("context_window_tokens", ag.context_window_tokens.to_string()),
                ("keep_recent_steps", ag.keep_recent_steps.to_string()),
                ("budget", serde_json::to_string(&ag.budget).unwrap_or_default()),
                ("guards", serde_json::to_string(&ag.guards).unwrap_or_default()),
            ],
        );
        let sh = &self.screenshot;
        section(out, "screenshot", &[("width", sh.width.to_string()), ("quality", sh.quality.to_string())]);
        let ssh = &self.ssh;
        section(
            out,
            "ssh",
            &[
                ("identity_file", quoted(&ssh.identity_file.display().to_string())),
                ("known_hosts", quoted(&self.known_hosts_path().display().to_string())),
                ("connect_timeout_s", ssh.connect_timeout_s.to_string()),
            ],
        );
        let b = &self.browser;
        section(
            out,
            "browser",
            &[
                ("headless", b.headless.to_string()),
                ("viewport_width", b.viewport_width.to_string()),
                ("viewport_height", b.viewport_height.to_string()),
                ("dialogs", format!("{:?}", b.dialogs).to_lowercase()),
                ("allowed_domains", serde_json::to_string(&b.allowed_domains).unwrap_or_default()),
                ("public_suffix_list", quoted(&b.public_suffix_list.display().to_string())),
            ],
        );
        self.write_storage(out);
        section(out, "logging", &[("level", quoted(&self.logging.level)), ("file", quoted(&self.logging.file))]);
        let n = &self.notifications;
        section(
            out,
            "notifications",
            &[
                ("telegram_base_url", quoted(&n.telegram_base_url)),
                ("timeout_s", n.timeout_s.to_string()),
                ("allow_private", n.allow_private.to_string()),
            ],
        );
    }

    fn write_storage(&self, out: &mut String) {
        let f = &self.files;
        section(
            out,
            "files",
            &[
                ("max_file_size_mb", f.max_file_size_mb.to_string()),
                ("max_session_storage_mb", f.max_session_storage_mb.to_string()),
                ("max_files_per_session", f.max_files_per_session.to_string()),
                ("approve_downloads_over_mb", f.approve_downloads_over_mb.to_string()),
            ],
        );
        let o = &self.output;
        let dir = quoted(&o.dir.to_string_lossy());
        let items = [
            ("dir", dir),
            ("retain_days", o.retain_days.to_string()),
            ("max_total_mb", o.max_total_mb.to_string()),
            ("sync", o.sync.as_str().to_string()),
        ];
        section(out, "output", &items);
    }

    /// What each model endpoint resolves to, as comments.
    fn write_endpoints(&self, out: &mut String) {
        out.push_str("# model endpoints as sessions will use them:\n");
        for name in self.llm_names() {
            let Some(e) = self.endpoint(&name) else { continue };
            let key = if e.api_key.is_empty() { "no key" } else { "key set" };
            let default = if name == DEFAULT_LLM { " (default)" } else { "" };
            let _ = writeln!(out, "#   {name}{default}: {} {} at {}, {key}", e.wire.name(), e.model, e.base_url);
            let (found, probed) = self.probed(&name, &e).unzip();
            if let Some(found) = found {
                let _ = writeln!(out, "#     probed: {found}");
            }
            let choice = super::profile::choose(&e, None, probed.unwrap_or_default(), self.agent.context_window_tokens);
            let _ = writeln!(out, "#     profile: {} ({})", choice.name.as_str(), choice.why);
        }
    }

    /// What `agent-controller probe` found for this endpoint (kept in the output directory),
    /// in words; `tool_mode: auto`, `vision: auto` and the context window use it.
    fn probed(&self, name: &str, e: &super::Endpoint) -> Option<(String, super::profile::Probed)> {
        let text = std::fs::read_to_string(self.output.dir.join("probes.json")).ok()?;
        let all: serde_json::Value = serde_json::from_str(&text).ok()?;
        let v = all.get(name).filter(|v| v["base_url"] == e.base_url.as_str() && v["model"] == e.model.as_str())?;
        let yes = |k: &str| if v[k] == true { "yes" } else { "no" };
        let context = v["context_tokens"].as_u64().map_or("unknown".to_string(), |n| n.to_string());
        let words = format!(
            "native tools {}, JSON mode {}, reply schema {}, images {}, context {context} tokens ({})",
            yes("native_tools"),
            yes("json_mode"),
            yes("reply_schema"),
            yes("vision"),
            v["probed_at"].as_str().unwrap_or("?")
        );
        let probed = super::profile::Probed {
            context_tokens: v["context_tokens"].as_u64(),
            native_tools: v["native_tools"].as_bool(),
        };
        Some((words, probed))
    }
}

/// How `vision` is written in config.yaml.
/// Passwords, bot tokens and webhook URLs (which carry tokens) inside a schedule.
fn mask_secrets(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if matches!(key.as_str(), "password" | "bot_token") || (key == "url" && value.is_string()) {
                    *value = serde_json::json!("********");
                } else {
                    mask_secrets(value);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        _ => {}
    }
}

fn vision(v: super::llm::Vision) -> String {
    match v {
        super::llm::Vision::Auto => "auto",
        super::llm::Vision::On => "true",
        super::llm::Vision::Off => "false",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `section.key` of every key config.yaml documents (its top two levels).
    fn documented_keys() -> Vec<String> {
        let text = include_str!("../../config.yaml");
        let mut keys = Vec::new();
        let mut section = String::new();
        for line in text.lines() {
            let code = line.split('#').next().unwrap_or("");
            let Some((key, _)) = code.split_once(':') else { continue };
            if key.trim().is_empty() || key.trim().contains(' ') {
                continue;
            }
            if !key.starts_with(' ') {
                section = key.to_string();
                keys.push(section.clone());
            } else if key.starts_with("  ") && !key.starts_with("   ") {
                keys.push(format!("{section}.{}", key.trim()));
            }
        }
        keys
    }

    #[test]
    fn every_documented_key_is_shown_and_no_secret_is() {
        let mut c = Config::default();
        c.apply_env(|k| match k {
            "ANTHROPIC_API_KEY" => Some("sk-ant-very-secret".into()),
            "AGENT_CONTROLLER_TOKEN" => Some("api-token-very-secret".into()),
            _ => None,
        });
        c.providers.insert(
            "local".into(),
            super::super::ProviderConfig {
                provider: "openai".into(),
                api_key: Secret::new("local-very-secret"),
                ..Default::default()
            },
        );
        let shown = c.effective_yaml();
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("api_key: \"********\"") && shown.contains("worker_token: \"\""), "{shown}");
        let parsed: serde_yaml::Value = serde_yaml::from_str(&shown).unwrap();
        for key in documented_keys() {
            let mut v = &parsed;
            for part in key.split('.') {
                v = v.get(part).unwrap_or_else(|| panic!("config check does not show {key}:\n{shown}"));
            }
        }
        // What it prints is a config the daemon accepts.
        Config::from_yaml(&shown).unwrap().validate().unwrap();
    }
}

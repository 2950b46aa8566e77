//! The model endpoints: `api` (the default) and any number of named `providers`, each a wire
//! format (`anthropic`, `openai`, `gemini`), a base URL, a model, a key and a tool mode.
//!
//! An empty `base_url` or `model` means the provider's own default. Keys come from the file
//! or the environment: `api` takes its provider's variable (`ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY`, `GEMINI_API_KEY` or `GOOGLE_API_KEY`), which overrides the file; a named
//! provider takes only its own `api_key` or the variable it names in `api_key_env`, so a key
//! meant for one service is never sent to another endpoint. `vision` (`auto`, `true`,
//! `false`; a named provider without one takes `api`'s) says whether the model reads images.

use super::price::Price;
use super::{ConfigError, positive};
use crate::protocol::guards::ProfileSetting;
use crate::util::secret::Secret;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The name of the default endpoint, the `api` section.
pub const DEFAULT_LLM: &str = "api";

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    pub provider: String,
    pub api_key: Secret,
    pub base_url: String,
    pub model: String,
    pub tool_mode: String,
    pub max_tokens: u32,
    pub timeout_s: u64,
    pub max_retries: u32,
    pub vision: Vision,
    /// Replies kept to what the page offers: JSON action mode sends a schema of the actions the
    /// turn offers, native tool calls get each turn's tools with their element arguments as
    /// enums of the page's refs. `auto` where the probe found the server enforces a schema,
    /// `true`, `false` (read as `vision` is). Off by default: on the local 1.5B model it has not
    /// measured better (docs/eval-history.md).
    pub reply_schema: Vision,
    /// Sampling temperature; unset = the provider's own default.
    pub temperature: Option<f32>,
    /// What its tokens cost (`price.rs`); unset = the list price of a model we know.
    pub price: Option<Price>,
    /// `auto` (chosen from the endpoint, `profile.rs`), `full` or `small`.
    pub profile: String,
}

/// Whether an endpoint's model reads images: `auto` finds out (an error saying images are
/// unsupported makes the session text-only), `true` and `false` say it up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Vision {
    #[default]
    Auto,
    On,
    Off,
}

impl<'de> Deserialize<'de> for Vision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Vision, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Vision;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("auto, true or false")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Vision, E> {
                Ok(if v { Vision::On } else { Vision::Off })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Vision, E> {
                match v {
                    "auto" => Ok(Vision::Auto),
                    "true" | "on" | "yes" => Ok(Vision::On),
                    "false" | "off" | "no" => Ok(Vision::Off),
                    _ => Err(E::custom(format!("unknown vision {v:?}; expected auto, true or false"))),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            provider: "anthropic".into(),
            api_key: Secret::default(),
            base_url: String::new(),
            model: String::new(),
            tool_mode: "native".into(),
            max_tokens: 4096,
            timeout_s: 120,
            max_retries: 5,
            vision: Vision::Auto,
            reply_schema: Vision::Off,
            temperature: None,
            price: None,
            profile: "auto".into(),
        }
    }
}

/// One entry of `providers:`; what it leaves out comes from `api`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    pub api_key_env: String,
    pub tool_mode: String,
    pub max_tokens: Option<u32>,
    pub vision: Option<Vision>,
    pub reply_schema: Option<Vision>,
    pub temperature: Option<f32>,
    pub price: Option<Price>,
    /// As `api.profile`; empty = `api`'s.
    pub profile: String,
}

/// Which wire format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
    Gemini,
}

impl Wire {
    pub fn parse(name: &str) -> Option<Wire> {
        match name {
            "anthropic" => Some(Wire::Anthropic),
            "openai" => Some(Wire::OpenAi),
            "gemini" => Some(Wire::Gemini),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
            Wire::Gemini => "gemini",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Wire::Anthropic => "https://api.anthropic.com",
            Wire::OpenAi => "https://api.openai.com",
            Wire::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            Wire::Anthropic => "claude-sonnet-4-6",
            Wire::OpenAi => "gpt-4.1-mini",
            Wire::Gemini => "gemini-2.5-flash",
        }
    }

    /// The environment variables `api` reads its key from, in order.
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Wire::Anthropic => &["ANTHROPIC_API_KEY"],
            Wire::OpenAi => &["OPENAI_API_KEY"],
            Wire::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        }
    }

    /// OpenAI-compatible servers on a laptop need no key; the hosted APIs do.
    pub fn needs_key(self) -> bool {
        self != Wire::OpenAi
    }
}

/// How tools reach the model: its own tool calling, or one flat JSON action per reply; `Auto`
/// is what `agent-controller probe` found for the endpoint (native until it was probed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolMode {
    Native,
    Json,
    Auto,
}

/// One endpoint with every default applied: what a session runs on.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub name: String,
    pub wire: Wire,
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    pub tool_mode: ToolMode,
    pub max_tokens: u32,
    pub vision: Vision,
    /// Whether each turn's reply is kept to the page (`ApiConfig::reply_schema`): a schema in
    /// JSON action mode, enums in the tool list with native tool calls.
    pub reply_schema: Vision,
    pub temperature: Option<f32>,
    /// Set in the config, else the list price of its model (`price::list_price`).
    pub price: Option<Price>,
    /// The configured profile (`auto` unless set).
    pub profile: ProfileSetting,
}

fn tool_mode(s: &str) -> Option<ToolMode> {
    match s {
        "" | "native" => Some(ToolMode::Native),
        "json" => Some(ToolMode::Json),
        "auto" => Some(ToolMode::Auto),
        _ => None,
    }
}

fn or_default(value: &str, default: &str) -> String {
    if value.trim().is_empty() { default.to_string() } else { value.trim().trim_end_matches('/').to_string() }
}

impl super::Config {
    /// Every endpoint name a session may ask for: `api`, then the named ones.
    pub fn llm_names(&self) -> Vec<String> {
        std::iter::once(DEFAULT_LLM.to_string()).chain(self.providers.keys().cloned()).collect()
    }

    /// The endpoint called `name`, defaults applied; `None` for an unknown name.
    pub fn endpoint(&self, name: &str) -> Option<Endpoint> {
        let api = &self.api;
        let (provider, base_url, model, key, mode, max_tokens) = if name == DEFAULT_LLM {
            (&api.provider, &api.base_url, &api.model, api.api_key.clone(), &api.tool_mode, api.max_tokens)
        } else {
            let p = self.providers.get(name)?;
            let key = if p.api_key.is_empty() && !p.api_key_env.is_empty() {
                Secret::new(std::env::var(&p.api_key_env).unwrap_or_default())
            } else {
                p.api_key.clone()
            };
            let provider = if p.provider.is_empty() { &api.provider } else { &p.provider };
            (provider, &p.base_url, &p.model, key, &p.tool_mode, p.max_tokens.unwrap_or(api.max_tokens))
        };
        let wire = Wire::parse(provider)?;
        Some(Endpoint {
            name: name.to_string(),
            wire,
            base_url: or_default(base_url, wire.default_base_url()),
            model: or_default(model, wire.default_model()),
            api_key: key,
            tool_mode: tool_mode(mode)?,
            max_tokens,
            vision: self.providers.get(name).and_then(|p| p.vision).unwrap_or(api.vision),
            reply_schema: self.providers.get(name).and_then(|p| p.reply_schema).unwrap_or(api.reply_schema),
            temperature: self.providers.get(name).and_then(|p| p.temperature).or(api.temperature),
            price: self.price(name, &or_default(model, wire.default_model())),
            profile: self.profile_setting(name)?,
        })
    }

    /// The profile configured for endpoint `name`: its own, else `api`'s.
    fn profile_setting(&self, name: &str) -> Option<ProfileSetting> {
        let own = self.providers.get(name).map(|p| p.profile.as_str()).filter(|p| !p.is_empty());
        ProfileSetting::parse(own.unwrap_or(&self.api.profile))
    }

    /// What `model` costs on the endpoint `name`: its configured price, else the model's list
    /// price.
    pub fn price(&self, name: &str, model: &str) -> Option<Price> {
        let configured = if name == DEFAULT_LLM { self.api.price } else { self.providers.get(name)?.price };
        configured.or_else(|| super::price::list_price(model))
    }

    /// `api`'s key from its provider's environment variable (it overrides the file).
    pub(super) fn apply_llm_env(&mut self, get: &dyn Fn(&str) -> Option<String>) {
        let Some(wire) = Wire::parse(&self.api.provider) else { return };
        if let Some(key) = wire.key_vars().iter().find_map(|v| get(v).filter(|k| !k.is_empty())) {
            self.api.api_key = Secret::new(key);
        }
    }

    pub(super) fn validate_llm(&self) -> Result<(), ConfigError> {
        let api = &self.api;
        check_endpoint("api", &api.provider, &api.base_url, &api.model, &api.tool_mode)?;
        positive("api.max_tokens", api.max_tokens.into())?;
        positive("api.timeout_s", api.timeout_s)?;
        if api.max_retries > 20 {
            return Err(ConfigError::key("api.max_retries", "must be at most 20"));
        }
        check_temperature("api.temperature", api.temperature)?;
        check_price("api.price", api.price)?;
        check_profile("api.profile", &api.profile)?;
        for (name, p) in &self.providers {
            let at = format!("providers.{name}");
            if name == DEFAULT_LLM
                || name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(ConfigError::key(&at, "names are letters, digits, `-`, `_`, `.`, and not `api`"));
            }
            let provider = if p.provider.is_empty() { &api.provider } else { &p.provider };
            check_endpoint(&at, provider, &p.base_url, &p.model, &p.tool_mode)?;
            if let Some(n) = p.max_tokens {
                positive(&format!("{at}.max_tokens"), n.into())?;
            }
            check_temperature(&format!("{at}.temperature"), p.temperature)?;
            check_price(&format!("{at}.price"), p.price)?;
            check_profile(&format!("{at}.profile"), &p.profile)?;
        }
        Ok(())
    }
}

fn check_price(at: &str, price: Option<Price>) -> Result<(), ConfigError> {
    match price {
        Some(p) if !p.is_valid() => Err(ConfigError::key(at, "prices are numbers of dollars, 0 or more")),
        _ => Ok(()),
    }
}

fn check_profile(at: &str, profile: &str) -> Result<(), ConfigError> {
    match ProfileSetting::parse(profile) {
        Some(_) => Ok(()),
        None => Err(ConfigError::key(at, format!("{profile:?} is not a profile; say auto, full or small"))),
    }
}

fn check_temperature(at: &str, t: Option<f32>) -> Result<(), ConfigError> {
    match t {
        Some(t) if !(0.0..=2.0).contains(&t) => Err(ConfigError::key(at, "must be between 0 and 2")),
        _ => Ok(()),
    }
}

fn check_endpoint(at: &str, provider: &str, base_url: &str, model: &str, mode: &str) -> Result<(), ConfigError> {
    if Wire::parse(provider).is_none() {
        return Err(ConfigError::key(
            &format!("{at}.provider"),
            format!("unknown provider {provider:?}; expected anthropic, openai or gemini"),
        ));
    }
    if !(base_url.is_empty() || base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::key(&format!("{at}.base_url"), "must start with http:// or https://"));
    }
    // Both go into requests and onto `config check`'s one-line endpoint comments.
    for (key, value) in [("base_url", base_url), ("model", model)] {
        if value.chars().any(char::is_control) {
            return Err(ConfigError::key(&format!("{at}.{key}"), "must not contain control characters"));
        }
    }
    if tool_mode(mode).is_none() {
        return Err(ConfigError::key(
            &format!("{at}.tool_mode"),
            format!("unknown mode {mode:?}; expected native, json or auto"),
        ));
    }
    Ok(())
}

/// The named endpoints, in name order.
pub type Providers = BTreeMap<String, ProviderConfig>;

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    #[test]
    fn keys_come_from_the_providers_own_variables() {
        let env = |name: &str| match name {
            "GOOGLE_API_KEY" => Some("g-key".to_string()),
            "OPENAI_API_KEY" => Some("o-key".to_string()),
            _ => None,
        };
        let mut c = Config::from_yaml("api:\n  provider: gemini\nproviders:\n  local: {provider: openai, base_url: 'http://127.0.0.1:11434'}\n  hosted: {provider: openai, api_key_env: OPENAI_API_KEY}\n").unwrap();
        c.apply_env(env);
        c.validate().unwrap();
        let api = c.endpoint("api").unwrap();
        assert_eq!((api.wire, api.api_key.expose(), api.model.as_str()), (Wire::Gemini, "g-key", "gemini-2.5-flash"));
        assert_eq!(api.base_url, "https://generativelanguage.googleapis.com");
        let local = c.endpoint("local").unwrap();
        assert!(local.api_key.is_empty(), "a key meant for OpenAI never goes to another endpoint");
        assert_eq!(local.base_url, "http://127.0.0.1:11434");
        assert_eq!(c.llm_names(), ["api", "hosted", "local"]);
        assert_eq!((api.vision, local.vision), (Vision::Auto, Vision::Auto));
        let c = Config::from_yaml(
            "api: {vision: false}\nproviders:\n  big: {provider: openai, vision: true}\n  small: {provider: openai}\n",
        )
        .unwrap();
        assert_eq!(c.endpoint("big").map(|e| e.vision), Some(Vision::On));
        assert_eq!(c.endpoint("small").map(|e| e.vision), Some(Vision::Off), "a provider without one takes api's");
        assert!(Config::from_yaml("api: {vision: maybe}\n").is_err());
        assert!(c.endpoint("nope").is_none());
    }

    #[test]
    fn bad_endpoints_are_named() {
        for (yaml, key) in [
            ("api:\n  provider: mistral\n", "api.provider"),
            ("api:\n  tool_mode: xml\n", "api.tool_mode"),
            ("api:\n  temperature: 3\n", "api.temperature"),
            ("providers:\n  x: {temperature: -1}\n", "providers.x.temperature"),
            ("providers:\n  x: {base_url: 'ftp://a'}\n", "providers.x.base_url"),
            ("providers:\n  api: {provider: openai}\n", "providers.api"),
            // Found by tests/fuzz: a line break would end `config check`'s endpoint comment.
            ("api:\n  model: \"a\\nb: 1\"\n", "api.model"),
            ("providers:\n  x: {base_url: \"http://a\\rb\"}\n", "providers.x.base_url"),
        ] {
            let e = Config::from_yaml(yaml).unwrap().validate().unwrap_err();
            assert!(e.to_string().contains(&format!("`{key}`")), "{yaml}: {e}");
        }
    }
}

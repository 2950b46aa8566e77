//! Which profile (`protocol::guards::Profile`) a session's model gets, and why in words.
//!
//! The session's `options.profile` wins, then the endpoint's `profile` in the config; `auto`
//! reads the endpoint: JSON action mode, a probe that found no native tool calling, a context
//! window of at most `SMALL_WINDOW` tokens, or a model name with at most `SMALL_PARAMS_B`
//! billion parameters (`qwen2.5-coder-1.5b`, `llama3.1:8b`) choose `small`; anything else —
//! the providers' default models among them — is `full`.
//!
//! **Rationale:** `full` is the default because a guard that holds or rewrites a call costs a
//! capable model its turn; `small` needs evidence, and every piece of evidence is named in `why`.

use super::{Endpoint, ToolMode};
use crate::protocol::guards::{Profile, ProfileChoice, ProfileSetting};

/// A context window this small (tokens) marks a small local model.
pub const SMALL_WINDOW: u64 = 16_384;
/// A model named with this many billion parameters or fewer is small.
pub const SMALL_PARAMS_B: f64 = 14.0;

/// What `agent-controller probe` found about the endpoint, if it was asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probed {
    pub context_tokens: Option<u64>,
    pub native_tools: Option<bool>,
}

/// The profile for a session on `endpoint`: `asked` by the session, else the config's, else
/// chosen from what is known (`configured_window`: `agent.context_window_tokens`, 0 = unset).
pub fn choose(
    endpoint: &Endpoint,
    asked: Option<ProfileSetting>,
    probed: Probed,
    configured_window: u64,
) -> ProfileChoice {
    let pick = |name: Profile, why: String| ProfileChoice { name, why };
    if let Some(p) = asked.and_then(ProfileSetting::fixed) {
        return pick(p, "asked for by the session (options.profile)".into());
    }
    if let Some(p) = endpoint.profile.fixed() {
        let key = if endpoint.name == super::DEFAULT_LLM {
            "api".to_string()
        } else {
            format!("providers.{}", endpoint.name)
        };
        return pick(p, format!("set in the config ({key}.profile)"));
    }
    if endpoint.tool_mode == ToolMode::Json {
        return pick(Profile::Small, "auto: JSON action mode (the endpoint does not call tools natively)".into());
    }
    if probed.native_tools == Some(false) {
        return pick(Profile::Small, "auto: the probe found no native tool calling".into());
    }
    let window = probed.context_tokens.or((configured_window > 0).then_some(configured_window));
    if let Some(w) = window.filter(|w| *w <= SMALL_WINDOW) {
        return pick(Profile::Small, format!("auto: a context window of {w} tokens (at most {SMALL_WINDOW})"));
    }
    if let Some(b) = billions(&endpoint.model).filter(|b| *b <= SMALL_PARAMS_B) {
        return pick(
            Profile::Small,
            format!("auto: model {:?} has {b}B parameters (at most {SMALL_PARAMS_B}B)", endpoint.model),
        );
    }
    let window =
        window.map_or_else(|| "its provider's usual context window".to_string(), |w| format!("a {w}-token window"));
    pick(Profile::Full, format!("auto: model {:?}, {window}, native tool calling", endpoint.model))
}

/// The parameter count a model's name states, in billions (`qwen2.5-coder-1.5b` → 1.5).
fn billions(model: &str) -> Option<f64> {
    model
        .to_ascii_lowercase()
        .split(['-', ':', '_', '/', ' '])
        .filter_map(|part| part.strip_suffix('b'))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .find_map(|n| n.parse::<f64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn endpoint(yaml: &str, name: &str) -> Endpoint {
        let config: Config = serde_yaml::from_str(yaml).unwrap();
        config.validate().unwrap();
        config.endpoint(name).unwrap()
    }

    #[test]
    fn the_providers_default_models_are_full_and_a_small_local_server_is_small() {
        for provider in ["anthropic", "openai", "gemini"] {
            let e = endpoint(&format!("api: {{provider: {provider}}}"), "api");
            let choice = choose(&e, None, Probed::default(), 0);
            assert_eq!(choice.name, Profile::Full, "{provider}: {}", choice.why);
        }
        let local = "api: {provider: openai, base_url: 'http://127.0.0.1:18080', model: qwen2.5-coder-1.5b}";
        let choice = choose(&endpoint(local, "api"), None, Probed::default(), 0);
        assert_eq!(choice.name, Profile::Small);
        assert!(choice.why.contains("1.5B"), "{}", choice.why);
        let unnamed = "api: {provider: openai, base_url: 'http://127.0.0.1:18080', model: local}";
        assert_eq!(choose(&endpoint(unnamed, "api"), None, Probed::default(), 8192).name, Profile::Small);
        let probed = Probed { context_tokens: Some(131_072), native_tools: Some(true) };
        assert_eq!(choose(&endpoint(unnamed, "api"), None, probed, 0).name, Profile::Full);
        let json = Probed { native_tools: Some(false), ..probed };
        assert_eq!(choose(&endpoint(unnamed, "api"), None, json, 0).name, Profile::Small);
    }

    #[test]
    fn the_session_then_the_config_override_auto() {
        let yaml =
            "api: {provider: anthropic}\nproviders:\n  local: {provider: openai, model: llama3.1:8b, profile: full}";
        let local = endpoint(yaml, "local");
        assert_eq!(choose(&local, None, Probed::default(), 0).why, "set in the config (providers.local.profile)");
        let asked = choose(&local, Some(ProfileSetting::Small), Probed::default(), 0);
        assert_eq!((asked.name, asked.why.as_str()), (Profile::Small, "asked for by the session (options.profile)"));
        assert_eq!(choose(&local, Some(ProfileSetting::Auto), Probed::default(), 0).name, Profile::Full);
        assert_eq!(billions("llama3.1:8b"), Some(8.0));
        assert_eq!(billions("claude-sonnet-4-5"), None);
        assert_eq!(billions("gpt-4o-mini"), None);
        let bad: Result<Config, _> = serde_yaml::from_str("api: {profile: tiny}");
        assert!(bad.unwrap().validate().unwrap_err().to_string().contains("api.profile"));
    }
}

//! `config.yaml`: parsing (`Config::from_yaml`), validation naming the key, the endpoints it
//! resolves to, and `config check`'s effective YAML, which must read back as the same config.

use super::*;
use agent_controller::config::Config as DaemonConfig;

const SHIPPED: &str = include_str!("../../config.yaml");

const SNIPPETS: &[&str] = &[
    "api:\n  provider: openai\n  base_url: http://127.0.0.1:11434/v1\n  model: qwen3\n  tool_mode: json\n",
    "providers:\n  local:\n    provider: openai\n    base_url: http://127.0.0.1:8000\n    model: m\n    max_tokens: 2048\n    vision: false\n",
    "server:\n  host: 0.0.0.0\n  api_token: aaaaaaaaaaaaaaaaaaaa\n  worker_token: bbbbbbbbbbbbbbbbbbbb\n  legacy_workers: false\n",
    "files: {max_file_size_mb: 1, max_session_storage_mb: 2}\noutput: {dir: /tmp/x, retain_days: 3}\n",
    "logging:\n  level: WARN\nexploration:\n  click_delay: 0.25\n",
];

/// Values a key may be set to: the edge numbers, wrong types, flow collections, anchors.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "65535",
    "65536",
    "4294967296",
    "18446744073709551616",
    "1.5",
    "-0.0",
    ".nan",
    ".inf",
    "1e400",
    "null",
    "~",
    "true",
    "\"\"",
    "''",
    "x",
    "\"a\\nb\"",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "&a 1",
    "*a",
    "!!binary aGk=",
    "anthropic",
    "openai",
    "gemini",
    "json",
    "native",
    "auto",
    "0.0.0.0",
    "::1",
    "localhost",
    "accept",
    "\"http://x\"",
    "|\n    two\n    lines",
    "\"\\u0000\"",
];

/// A value on one line replaced: most cases stay valid YAML and reach validation.
#[derive(Debug, Clone)]
struct LineEdit(Index, usize);

fn with_line_edits(text: &str, edits: &[LineEdit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for LineEdit(i, v) in edits {
        if lines.is_empty() {
            break;
        }
        let at = i.index(lines.len());
        let line = &mut lines[at];
        if let Some((key, _)) = line.split_once(": ") {
            *line = format!("{key}: {}", VALUES[*v]);
        } else if line.ends_with(':') {
            line.push_str(&format!(" {}", VALUES[*v]));
        }
    }
    lines.join("\n") + "\n"
}

fn yaml() -> impl Strategy<Value = String> {
    let mut examples: Vec<&str> = SNIPPETS.to_vec();
    examples.push(SHIPPED);
    let base = prop::sample::select(examples.clone());
    let line_edit = (any::<Index>(), 0..VALUES.len()).prop_map(|(i, v)| LineEdit(i, v));
    let edited = (base.clone(), prop::collection::vec(line_edit, 1..4)).prop_map(|(t, e)| with_line_edits(t, &e));
    prop_oneof![
        4 => edited,
        3 => text_input(&examples),
        1 => (base, prop::collection::vec(edit(), 0..3), 0..4usize)
            .prop_map(|(t, e, n)| String::from_utf8_lossy(&apply(t.repeat(n.max(1)).into_bytes(), &e)).into_owned()),
    ]
}

#[test]
fn fuzz_config() {
    fuzz("config.yaml (Config::from_yaml, validate, effective_yaml)", yaml(), |text| {
        let config = match DaemonConfig::from_yaml(&text) {
            Ok(c) => c,
            Err(e) => {
                prop_assert!(!e.message.is_empty());
                if let Some(key) = &e.key {
                    prop_assert!(!key.is_empty() && !key.contains(char::is_whitespace), "{key:?}");
                }
                return Ok(());
            }
        };
        let _ = config.check_exposure(false);
        if let Err(e) = config.validate() {
            prop_assert!(e.key.is_some(), "validation names the key: {}", e.message);
            return Ok(());
        }
        for name in config.llm_names() {
            prop_assert!(config.endpoint(&name).is_some(), "endpoint {name} of a valid config");
        }
        // `config check` prints YAML that reads back as the same configuration.
        let shown = config.effective_yaml();
        let again = DaemonConfig::from_yaml(&shown)
            .map_err(|e| TestCaseError::fail(format!("effective YAML does not parse: {e:?}\n{shown}")))?;
        prop_assert_eq!(again.effective_yaml(), shown);
        Ok(())
    });
}

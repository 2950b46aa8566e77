//! What the worker keeps from the commands it runs: a clean environment for child processes,
//! the worker token read from a private file, and known secrets scrubbed from what it sends.
//!
//! Shell commands start from an empty environment plus `ALLOWED_ENV` (as this process has
//! them) and the no-pager variables, so `env` run by a model shows no token and no API key.
//! `--token-file` must be a regular file no one else may read (0600 or stricter). Every
//! string of a result posted to the controller has the worker token and the worker's secret
//! replaced by `[redacted]`.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The variables a command inherits from the worker (when set); nothing else.
pub const ALLOWED_ENV: [&str; 10] =
    ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "TZ", "SHELL", "TMPDIR"];

/// When the worker itself has no `PATH`.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

const REDACTED: &str = "[redacted]";

/// Give `cmd` an empty environment plus the allow-list and the no-pager variables.
pub fn clean_env(cmd: &mut Command) {
    cmd.env_clear();
    for key in ALLOWED_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    if std::env::var_os("PATH").is_none() {
        cmd.env("PATH", DEFAULT_PATH);
    }
    for (k, v) in agent_controller::util::ansi::NO_PAGER_ENV {
        cmd.env(k, v);
    }
}

/// The token in `path`: a regular file only its owner can read or write.
pub fn read_token_file(path: &Path) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read --token-file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("--token-file {shown} is not a regular file"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "--token-file {shown} is readable by others (mode {:o}); chmod 600 it",
            meta.mode() & 0o777
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read --token-file {shown}: {e}"))?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(format!("--token-file {shown} is empty"));
    }
    Ok(token)
}

/// Replace every known secret (4 characters or more) in every string of `value`.
pub fn scrub(value: &mut Value, secrets: &[&str]) {
    let secrets: Vec<&str> = secrets.iter().copied().filter(|s| s.len() >= 4).collect();
    if !secrets.is_empty() {
        scrub_strings(value, &secrets);
    }
}

fn scrub_strings(value: &mut Value, secrets: &[&str]) {
    match value {
        Value::String(s) => {
            for secret in secrets {
                if s.contains(secret) {
                    *s = s.replace(secret, REDACTED);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_strings(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub_strings(v, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrubs_nested_strings() {
        let mut v = json!({"stdout": "TOKEN=wtok-secret-1\n", "list": ["a wtok-secret-1 b"], "n": 1});
        scrub(&mut v, &["wtok-secret-1", "ab"]);
        assert_eq!(v, json!({"stdout": "TOKEN=[redacted]\n", "list": ["a [redacted] b"], "n": 1}));
    }
}

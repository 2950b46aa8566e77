//! What the worker keeps from the commands it runs: a clean environment for child processes,
//! the worker token read from a private file, and known secrets scrubbed from what it sends.
//!
//! Shell commands start from an empty environment plus `ALLOWED_ENV` (as this process has
//! them) and the no-pager variables, so `env` run by a model shows no token and no API key;
//! Chromium gets the same list plus its display and proxy variables (`BROWSER_ENV`).
//! `--token-file` must be a regular file no one else may read (0600 or stricter). Every
//! string of a result posted to the controller has the worker token and the worker's secret
//! replaced by `[redacted]`.

use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variables a command inherits from the worker (when set); nothing else.
pub const ALLOWED_ENV: [&str; 10] =
    ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "TZ", "SHELL", "TMPDIR"];

/// When the worker itself has no `PATH`.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

const REDACTED: &str = "[redacted]";

/// What Chromium needs beyond `ALLOWED_ENV`: the display, its runtime and font folders, and
/// the proxy a person may route browsing through.
pub const BROWSER_ENV: [&str; 15] = [
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_DIRS",
    "FONTCONFIG_PATH",
    "FONTCONFIG_FILE",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
];

/// Give `cmd` an empty environment plus the allow-list and the no-pager variables.
pub fn clean_env(cmd: &mut Command) {
    allowed_only(cmd, &[]);
    for (k, v) in agent_controller::util::ansi::NO_PAGER_ENV {
        cmd.env(k, v);
    }
}

/// The browser's environment: the allow-list and `BROWSER_ENV`, so no token or API key of
/// the worker's reaches Chromium or anything it starts.
pub fn browser_env(cmd: &mut Command) {
    allowed_only(cmd, &BROWSER_ENV);
}

fn allowed_only(cmd: &mut Command, extra: &[&str]) {
    cmd.env_clear();
    for key in ALLOWED_ENV.iter().chain(extra) {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    if std::env::var_os("PATH").is_none() {
        cmd.env("PATH", DEFAULT_PATH);
    }
}

/// Why `--token-file` gave no token; each message names the file.
#[derive(Debug)]
pub enum TokenFileError {
    /// The file could not be looked at or read.
    Read(PathBuf, std::io::Error),
    /// It is a link, a folder or something else than a regular file.
    NotAFile(PathBuf),
    /// Others may read or write it (its permission bits).
    Open(PathBuf, u32),
    /// It holds nothing but white space.
    Empty(PathBuf),
}

impl fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenFileError::Read(path, e) => write!(f, "cannot read --token-file {}: {e}", path.display()),
            TokenFileError::NotAFile(path) => write!(f, "--token-file {} is not a regular file", path.display()),
            TokenFileError::Open(path, mode) => {
                write!(f, "--token-file {} is readable by others (mode {mode:o}); chmod 600 it", path.display())
            }
            TokenFileError::Empty(path) => write!(f, "--token-file {} is empty", path.display()),
        }
    }
}

impl std::error::Error for TokenFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenFileError::Read(_, e) => Some(e),
            _ => None,
        }
    }
}

/// The token in `path`: a regular file only its owner can read or write.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    use std::os::unix::fs::MetadataExt;
    let unread = |e| TokenFileError::Read(path.to_path_buf(), e);
    let meta = std::fs::symlink_metadata(path).map_err(unread)?;
    if !meta.is_file() {
        return Err(TokenFileError::NotAFile(path.to_path_buf()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(TokenFileError::Open(path.to_path_buf(), meta.mode() & 0o777));
    }
    let text = std::fs::read_to_string(path).map_err(unread)?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(TokenFileError::Empty(path.to_path_buf()));
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

    /// A real child started with the browser's environment sees the allowed variables and none
    /// of the rest of the worker's (cargo's `CARGO*` variables, at the least, are there to miss).
    #[test]
    fn the_browser_environment_holds_only_the_allowed_variables() {
        let mut cmd = Command::new("env");
        browser_env(&mut cmd);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let seen: Vec<&str> = out.lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k).collect();
        assert!(seen.contains(&"PATH"), "{seen:?}");
        let allowed = |k: &str| ALLOWED_ENV.contains(&k) || BROWSER_ENV.contains(&k);
        assert!(seen.iter().all(|k| allowed(k)), "{seen:?}");
        let withheld: Vec<String> = std::env::vars().map(|(k, _)| k).filter(|k| !allowed(k)).collect();
        assert!(!withheld.is_empty(), "the test needs a variable to withhold");
    }
}

//! The values an exported Python script uses, as Python expressions: a recorded value a person
//! may change becomes a command-line option with it as the default; a replay placeholder
//! `{{name}}` a required option `--name`; a secret (a value the scrubbed record holds as
//! `[redacted]`, what a person typed, a login's credentials) an environment variable read by
//! `secret("NAME")`, which the script's header and `--help` list. A secret's value is never
//! known here, so it can never be written into a script.

use std::collections::BTreeMap;

/// What the scrubber leaves where a secret was (`vault.rs`).
pub(crate) const REDACTED: &str = "[redacted]";

/// A command-line option of the script.
pub(crate) struct Opt {
    pub flag: String,
    pub dest: String,
    pub default: Option<String>,
    pub help: String,
}

/// The options and environment variables a script reads.
#[derive(Default)]
pub(crate) struct Values {
    pub options: Vec<Opt>,
    /// (name, what it holds), in order of use.
    pub secrets: Vec<(String, String)>,
    placeholders: BTreeMap<String, String>,
}

/// Flags the script itself takes.
const RESERVED: &[&str] = &["browser", "headed", "downloads", "timeout", "help"];

impl Values {
    /// A value as recorded: `{{name}}` read from `--name`, `[redacted]` from the environment.
    pub fn literal(&mut self, raw: &str, step: u64) -> String {
        if !raw.contains(REDACTED) {
            return self.with_placeholders(raw);
        }
        let name = format!("SECRET_{}", self.secrets.iter().filter(|(n, _)| n.starts_with("SECRET_")).count() + 1);
        let about = format!("step {step}: a secret the session's record keeps as {REDACTED}");
        let read = self.secret(&name, &about);
        let mut parts = Vec::new();
        for (i, part) in raw.split(REDACTED).enumerate() {
            if i > 0 {
                parts.push(read.clone());
            }
            if !part.is_empty() {
                parts.push(self.with_placeholders(part));
            }
        }
        parts.join(" + ")
    }

    /// A value a person may change on the command line (`--your-name`), the recorded one by
    /// default; one holding a placeholder or a secret stays as `literal` reads it.
    pub fn option(&mut self, raw: &str, step: u64, about: &str) -> String {
        if raw.contains(REDACTED) || raw.contains("{{") {
            return self.literal(raw, step);
        }
        let dest = format!("v{}", self.options.iter().filter(|o| o.dest.starts_with('v')).count() + 1);
        let flag = self.unused_flag(about, &dest);
        let help = format!("step {step}: {about} (recorded: %(default)s)");
        self.options.push(Opt { flag, dest: dest.clone(), default: Some(raw.to_string()), help });
        format!("args.{dest}")
    }

    /// A secret from the environment variable `name` (listed once).
    pub fn secret(&mut self, name: &str, about: &str) -> String {
        if !self.secrets.iter().any(|(n, _)| n == name) {
            self.secrets.push((name.to_string(), about.to_string()));
        }
        format!("secret({})", py(name))
    }

    /// `raw` with each `{{name}}` read from its required option.
    fn with_placeholders(&mut self, raw: &str) -> String {
        let mut parts = Vec::new();
        let mut rest = raw;
        while let Some(start) = rest.find("{{") {
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else { break };
            let name = after[..end].trim();
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                parts.push(py(&rest[..start + 2]));
                rest = after;
                continue;
            }
            if start > 0 {
                parts.push(py(&rest[..start]));
            }
            parts.push(format!("args.{}", self.placeholder(name)));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() || parts.is_empty() {
            parts.push(py(rest));
        }
        parts.join(" + ")
    }

    fn placeholder(&mut self, name: &str) -> String {
        if let Some(dest) = self.placeholders.get(name) {
            return dest.clone();
        }
        let dest = format!("p{}", self.placeholders.len() + 1);
        let flag = self.unused_flag(name, &dest);
        let help = format!("the replay parameter {{{{{name}}}}} (required)");
        self.options.push(Opt { flag, dest: dest.clone(), default: None, help });
        self.placeholders.insert(name.to_string(), dest.clone());
        dest
    }

    /// `--words-of-about`, made unique among the options so far.
    fn unused_flag(&self, about: &str, fallback: &str) -> String {
        let mut slug = String::new();
        for c in about.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_alphanumeric() {
                slug.push(c);
            } else if !slug.ends_with('-') && !slug.is_empty() {
                slug.push('-');
            }
            if slug.len() >= 30 {
                break;
            }
        }
        let slug = slug.trim_matches('-');
        let base = if slug.is_empty() || RESERVED.contains(&slug) { fallback.to_string() } else { slug.to_string() };
        let taken = |f: &str| self.options.iter().any(|o| o.flag == f);
        let mut flag = base.clone();
        let mut n = 2;
        while taken(&flag) {
            flag = format!("{base}-{n}");
            n += 1;
        }
        flag
    }
}

/// A Python string literal (JSON's escapes are Python's).
pub(crate) fn py(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

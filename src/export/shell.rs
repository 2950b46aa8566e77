//! A shell session as a POSIX shell script: its commands in order under `set -euo pipefail`,
//! each in its own folder where it named one, files it wrote as here-documents, and above each
//! the model's words and the approval it had. A command that exited non-zero in the session and
//! was gone on from is let through (`|| true`), as the session let it through.
//!
//! Secrets: a part of a command the record keeps as `[redacted]`, and what a person typed, come
//! from environment variables (`SECRET_N`, `TYPED_N`) the header names and the script checks
//! before the first command; replay placeholders `{{name}}` likewise (`NAME`).

use super::values::REDACTED;
use super::{Run, Step, comment_text};
use crate::protocol::takeover::typed_pointers;
use crate::protocol::tools::Tool;
use serde_json::Value;

/// The environment a script reads: (name, what it holds).
#[derive(Default)]
struct Env(Vec<(String, String)>);

impl Env {
    fn add(&mut self, name: String, about: String) -> String {
        if !self.0.iter().any(|(n, _)| *n == name) {
            self.0.push((name.clone(), about));
        }
        format!("${{{name}}}")
    }

    fn count(&self, prefix: &str) -> usize {
        self.0.iter().filter(|(n, _)| n.starts_with(prefix)).count()
    }
}

pub(super) fn script(run: &Run<'_>, steps: &[Step<'_>]) -> String {
    let mut env = Env::default();
    let mut body = String::new();
    let mut exported = 0;
    for step in steps {
        let Some(lines) = emit(step, &mut env) else { continue };
        exported += 1;
        body.push_str(&format!("\n# {}. {}\n", step.number(), comment_text(&what(step))));
        if let Some(m) = step.meant() {
            body.push_str(&format!("# {m}\n"));
        }
        if let Some(a) = approval(&step.entry["approved"]) {
            body.push_str(&format!("# {a}\n"));
        }
        body.push_str(&lines);
        body.push('\n');
    }
    if exported == 0 {
        let said = format!("session {} has no commands to run again: nothing to do", run.id);
        body.push_str(&format!("\necho {} >&2\n", quote(&said)));
    }
    let mut out = format!(
        "#!/usr/bin/env bash\n# agent-controller: session {} as a shell script ({exported} steps).\n",
        comment_text(run.id)
    );
    out.push_str(&format!("# Ran on: {}\n", comment_text(run.target)));
    if let Some(task) = run.instruction {
        out.push_str(&format!("# Task: {}\n", comment_text(task)));
    }
    out.push_str(&format!("# Recorded: {} (status {}).\n", comment_text(run.created_at), comment_text(run.status)));
    out.push_str("# Run it on the machine the session ran on: bash ");
    out.push_str(&comment_text(&super::Format::Sh.file_name(run.id)));
    out.push('\n');
    if env.0.is_empty() {
        out.push_str("# Secrets: none.\n");
    } else {
        out.push_str("# Read from the environment, never written here:\n");
        for (name, about) in &env.0 {
            out.push_str(&format!("#   {name}  {}\n", comment_text(about)));
        }
    }
    out.push_str("\nset -euo pipefail\n");
    for (name, about) in &env.0 {
        out.push_str(&format!(
            ": \"${{{name}:?set {name}: {}}}\"\n",
            comment_text(about).replace(['"', '`', '$', '\\', '}'], "")
        ));
    }
    out.push_str(&body);
    out
}

fn what(step: &Step<'_>) -> String {
    let a = step.args();
    match step.tool {
        Tool::RunCommand => "run a command".into(),
        Tool::WriteFile => format!("write the file {}", a["path"].as_str().unwrap_or("")),
        other => other.name().replace('_', " "),
    }
}

/// The approval a step had, in words.
fn approval(approved: &Value) -> Option<String> {
    let by = approved["by"].as_str()?;
    let who = match by {
        "person" => "approved by a person",
        "auto_confirm" => "approved by auto_confirm (no one was asked)",
        "validator" => "approved by the validator model",
        _ => "approved",
    };
    Some(if approved["edited"].is_string() {
        format!("{who}, who edited the command into the one below")
    } else {
        who.into()
    })
}

/// The step's lines, or `None` for a step that only reads.
fn emit(step: &Step<'_>, env: &mut Env) -> Option<String> {
    let a = step.args();
    let n = step.number();
    let typed = typed(step);
    match step.tool {
        Tool::RunCommand => {
            let recorded = step.entry["approved"]["edited"].as_str().or(a["command"].as_str()).unwrap_or("");
            let command = if typed.iter().any(|p| p == "/command") {
                let name = format!("TYPED_{}", env.count("TYPED_") + 1);
                format!("eval \"{}\"", env.add(name, format!("step {n}: the command a person typed")))
            } else {
                with_env(recorded, n, env)
            };
            let command = match a["cwd"].as_str().filter(|c| !c.is_empty()) {
                Some(dir) => format!("(cd {} && {command})", quote(dir)),
                None => command,
            };
            Some(match exit_code(&step.entry["observation"]) {
                Some(code) if code != 0 => {
                    format!("{command} || true  # it exited {code} in the session, which went on")
                }
                _ => command,
            })
        }
        Tool::WriteFile => {
            let path = quote(a["path"].as_str().unwrap_or(""));
            let content = a["content"].as_str().unwrap_or("");
            if typed.iter().any(|p| p == "/content") || content.contains(REDACTED) {
                let name = format!("SECRET_{}", env.count("SECRET_") + 1);
                let var =
                    env.add(name, format!("step {n}: the content of {}", a["path"].as_str().unwrap_or("the file")));
                return Some(format!("printf '%s' \"{var}\" > {path}"));
            }
            let base64 = a["encoding"] == "base64";
            if !base64 && !content.ends_with('\n') {
                return Some(format!("printf '%s' {} > {path}", quote(content)));
            }
            let mut end = "AGENT_CONTROLLER_EOF".to_string();
            while content.lines().any(|l| l == end) {
                end.push('_');
            }
            let (decode, newline) = if base64 { ("base64 -d", "\n") } else { ("cat", "") };
            Some(format!("{decode} > {path} <<'{end}'\n{content}{newline}{end}"))
        }
        _ => None,
    }
}

/// Where a step holds what a person typed.
fn typed(step: &Step<'_>) -> Vec<String> {
    match step.entry["typed"].as_array() {
        Some(ps) => ps.iter().filter_map(|p| p.as_str().map(str::to_string)).collect(),
        None if step.entry["by"] == "human" => typed_pointers(step.tool, step.args()),
        None => Vec::new(),
    }
}

/// A recorded command with each `[redacted]` and `{{name}}` read from the environment.
fn with_env(command: &str, n: u64, env: &mut Env) -> String {
    let mut out = command.to_string();
    if out.contains(REDACTED) {
        let name = format!("SECRET_{}", env.count("SECRET_") + 1);
        let var = env.add(name, format!("step {n}: a secret the session's record keeps as {REDACTED}"));
        out = out.replace(REDACTED, &format!("\"{var}\""));
    }
    let mut rest = out.as_str();
    let mut filled = String::new();
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            filled.push_str(&rest[..start + 2]);
            rest = after;
            continue;
        }
        filled.push_str(&rest[..start]);
        filled
            .push_str(&format!("\"{}\"", env.add(name.to_uppercase(), format!("the replay parameter {{{{{name}}}}}"))));
        rest = &after[end + 2..];
    }
    filled.push_str(rest);
    filled
}

/// The exit code a command's recorded result shows.
fn exit_code(observation: &Value) -> Option<i64> {
    let text = observation.as_str()?;
    let at = text.find("\"exit_code\":")? + "\"exit_code\":".len();
    let digits: String = text[at..].trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().ok()
}

/// A word for the shell: in single quotes, a quote inside as `'\''`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

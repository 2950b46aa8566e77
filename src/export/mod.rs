//! A run exported as a script a person owns (`GET /sessions/:id/export?format=…`): a browser
//! session as a standalone Python script on Playwright's sync API (`playwright.rs`, its
//! locators picked in `locator.rs`), a shell session as a POSIX shell script (`shell.rs`).
//!
//! What is exported: the steps that ran on the target, succeeded and were no dry run, in the
//! order of the step log, with the model's words for each as a comment. What the guarantees
//! are: a script never holds a secret — the step log is scrubbed (a secret there is
//! `[redacted]`), what a person typed is recorded as its length, and a login's credentials are
//! never recorded — so each of them is read from an environment variable the script names in its
//! header (`values.rs`); a session without such steps still gets a script, which says so.
//! This is text made from the record: nothing here touches a session or the disk.

mod locator;
mod playwright;
mod shell;
mod values;

use crate::protocol::SessionType;
use crate::protocol::tools::{Runs, Tool};
use serde_json::Value;

/// The formats a run exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Playwright,
    Sh,
}

impl Format {
    pub const NAMES: &'static str = "playwright, sh";

    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "playwright" | "python" | "py" => Some(Format::Playwright),
            "sh" | "shell" | "bash" => Some(Format::Sh),
            _ => None,
        }
    }

    /// The format a session's type exports to.
    pub fn of(kind: SessionType) -> Option<Format> {
        match kind {
            SessionType::Browser => Some(Format::Playwright),
            SessionType::Shell => Some(Format::Sh),
            SessionType::App => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Playwright => "playwright",
            Format::Sh => "sh",
        }
    }

    /// The script's file name for session `id`.
    pub fn file_name(self, id: &str) -> String {
        match self {
            Format::Playwright => format!("{id}.py"),
            Format::Sh => format!("{id}.sh"),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Playwright => "text/x-python; charset=utf-8",
            Format::Sh => "text/x-shellscript; charset=utf-8",
        }
    }
}

/// What an export reads of a session: its record's words and its step log.
pub struct Run<'a> {
    pub id: &'a str,
    pub kind: SessionType,
    pub target: &'a str,
    pub instruction: Option<&'a str>,
    pub status: &'a str,
    pub created_at: &'a str,
    pub steps: &'a [Value],
}

/// Why a session has no script in the format asked for (the caller's 400).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoScript {
    #[error("session {id} is a {} session: it exports as format={}, not {}", kind_name(*.kind), .own.name(), .asked.name())]
    OtherFormat { id: String, kind: SessionType, own: Format, asked: Format },
    #[error("session {0} is a desktop session, which has no script export (its steps: /sessions/{0}/steps)")]
    Desktop(String),
}

/// The script, or why this session has none in this format.
pub fn script(format: Format, run: &Run<'_>) -> Result<String, NoScript> {
    match (Format::of(run.kind), format) {
        (Some(own), asked) if own == asked => {}
        (Some(own), asked) => {
            return Err(NoScript::OtherFormat { id: run.id.to_string(), kind: run.kind, own, asked });
        }
        (None, _) => return Err(NoScript::Desktop(run.id.to_string())),
    }
    let steps = acting_steps(run.steps, run.kind);
    Ok(match format {
        Format::Playwright => playwright::script(run, &steps),
        Format::Sh => shell::script(run, &steps),
    })
}

fn kind_name(kind: SessionType) -> &'static str {
    match kind {
        SessionType::Browser => "browser",
        SessionType::Shell => "shell",
        SessionType::App => "desktop",
    }
}

/// One step to export: its tool and its log entry.
pub(crate) struct Step<'a> {
    pub tool: Tool,
    pub entry: &'a Value,
}

impl Step<'_> {
    /// Its number in the step log.
    pub fn number(&self) -> u64 {
        self.entry["step"].as_u64().unwrap_or(0)
    }

    pub fn args(&self) -> &Value {
        &self.entry["args"]
    }

    /// What the comment above it says: who did it and what they meant.
    pub fn meant(&self) -> Option<String> {
        if self.entry["by"] == "human" {
            return Some("a person did this while taking over".into());
        }
        let thought = self.entry["thought"].as_str().map(comment_text).filter(|t| !t.is_empty())?;
        Some(format!("the model: {thought}"))
    }
}

/// The steps that did something on the target: succeeded, no dry run, a target tool of this
/// kind of session (a login is the controller's tool, but types on the page).
fn acting_steps(log: &[Value], kind: SessionType) -> Vec<Step<'_>> {
    log.iter()
        .filter(|s| s["is_error"] != true && s["dry_run"] != true)
        .filter_map(|entry| {
            let tool = entry["tool"].as_str().and_then(Tool::from_name)?;
            let here =
                tool.spec().runs == Runs::Target(kind) || (tool == Tool::PerformLogin && entry["login"].is_object());
            here.then_some(Step { tool, entry })
        })
        .collect()
}

/// A text for one comment line: no line breaks or control characters, bounded.
pub(crate) fn comment_text(text: &str) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let words: Vec<&str> = flat.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() > 240 { format!("{}…", joined.chars().take(240).collect::<String>()) } else { joined }
}

#[cfg(test)]
mod tests;

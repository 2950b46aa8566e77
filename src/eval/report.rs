//! The eval's results: one row per run of a task, the totals, and both as a table or JSON.

use serde_json::{Value, json};
use std::fmt::Write;

/// One run of one task.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub task: String,
    pub kind: String,
    pub run: u32,
    pub pass: bool,
    /// Why it did not pass (empty when it did).
    pub why: String,
    pub status: String,
    pub turns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The first model request's input tokens (system, tools, opening message).
    pub first_request_tokens: Option<u64>,
    pub seconds: f64,
    pub session: String,
}

impl Row {
    pub fn new(task: &str, kind: &str, run: u32) -> Row {
        Row { task: task.into(), kind: kind.into(), run, ..Row::default() }
    }

    /// Status, turns and tokens from the session as the API shows it.
    pub fn fill_from(&mut self, session: &Value, first_request_tokens: Option<u64>) {
        self.status = session["status"].as_str().unwrap_or("?").to_string();
        self.turns = session["turn"].as_u64().unwrap_or(0);
        let usage = &session["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        self.input_tokens = n("input_tokens")
            .saturating_add(n("cache_read_input_tokens"))
            .saturating_add(n("cache_creation_input_tokens"));
        self.output_tokens = n("output_tokens");
        self.first_request_tokens = first_request_tokens;
    }

    pub fn to_json(&self) -> Value {
        json!({
            "task": self.task, "kind": self.kind, "run": self.run, "pass": self.pass, "why": self.why,
            "status": self.status, "turns": self.turns, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "first_request_tokens": self.first_request_tokens,
            "seconds": (self.seconds * 10.0).round() / 10.0, "session": self.session,
        })
    }

    /// The row as a line of the table.
    pub fn line(&self) -> String {
        let first = self.first_request_tokens.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
        format!(
            "{:<14} {:>3} {:<4} {:>5} {:>8} {:>7} {:>6} {:>7.1}  {}",
            self.task,
            self.run,
            if self.pass { "pass" } else { "FAIL" },
            self.turns,
            self.input_tokens,
            self.output_tokens,
            first,
            self.seconds,
            if self.pass { String::new() } else { format!("{}: {}", self.status, self.why) }
        )
    }
}

pub const HEADER: &str = "task           run pass turns in_tokens out_tok first    secs  why";

/// Every run, and what the eval ran against.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub llm: String,
    pub model: String,
    pub tool_mode: String,
    pub rows: Vec<Row>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.pass).count()
    }

    /// Passed runs in percent of all (0 when none ran).
    pub fn pass_percent(&self) -> f64 {
        if self.rows.is_empty() { 0.0 } else { 100.0 * self.passed() as f64 / self.rows.len() as f64 }
    }

    /// The largest first request of a browser task (the bar is about those).
    pub fn first_request_browser(&self) -> Option<u64> {
        self.rows.iter().filter(|r| r.kind == "browser").filter_map(|r| r.first_request_tokens).max()
    }

    pub fn totals(&self) -> String {
        let sum = |f: fn(&Row) -> u64| self.rows.iter().map(f).fold(0u64, u64::saturating_add);
        let secs: f64 = self.rows.iter().map(|r| r.seconds).sum();
        let mut out = String::new();
        let _ = write!(
            out,
            "passed {}/{} ({:.0} %) · {} turns · {} input + {} output tokens · {:.0} s · {} {} ({})",
            self.passed(),
            self.rows.len(),
            self.pass_percent(),
            sum(|r| r.turns),
            sum(|r| r.input_tokens),
            sum(|r| r.output_tokens),
            secs,
            self.llm,
            self.model,
            self.tool_mode,
        );
        if let Some(n) = self.first_request_browser() {
            let _ = write!(out, "\nfirst request of a browser task: {n} tokens (system, tools and the opening page)");
        }
        out
    }

    pub fn to_json(&self) -> Value {
        json!({
            "llm": self.llm, "model": self.model, "tool_mode": self.tool_mode,
            "passed": self.passed(), "runs": self.rows.len(), "pass_percent": self.pass_percent(),
            "first_request_tokens_browser": self.first_request_browser(),
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
        })
    }
}

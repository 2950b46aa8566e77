//! What the console's commands share: the exit codes and the usage text, `Out` (JSON lines or
//! text, colour only on a terminal), model and page text made safe for a terminal (`shown`),
//! tables, a session's status, downloading its files, and how a followed session's
//! confirmations are answered (`Answers`). The commands import from here, never from each other
//! (`console.rs` dispatches to them), so no two files of the console import each other.

use super::client::{ApiClient, ClientError, path_segment};
use super::progress::Progress;
use super::table::{self, Align};
use serde_json::{Value, json};

/// Documented exit codes.
pub mod exit {
    pub const FINISHED: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const STOPPED: u8 = 3;
    pub const DENIED: u8 = 4;
    pub const UNREACHABLE: u8 = 5;
}

pub const USAGE: &str = "\
console commands (API from --api URL | AGENT_CONTROLLER_API | http://127.0.0.1:5900;
token from --token | AGENT_CONTROLLER_TOKEN; a private CA from --ca-file | AGENT_CONTROLLER_CA_FILE):

    agent-controller task --url URL \"instruction\"      a browser task, followed to its end
    agent-controller task --title WINDOW \"instruction\" a desktop-app task
    agent-controller task --host NAME \"instruction\"    a shell task (on a worker)
    agent-controller task --ssh USER@HOST[:PORT] \"…\"  a shell task over SSH (no worker)
    agent-controller explore --url URL [--goal G]       explore and print the report
    agent-controller explore --title WINDOW [--goal G]
    agent-controller replay ID [--param NAME=VALUE]… [--instruction TEXT]   re-run a session's steps
        --worker NAME  --max-turns N  --auto-confirm  --dry-run  --allow-domain HOST  --yes | --no  --out DIR  --json
        --approval auto|validator|human  --llm NAME  --model MODEL
        --username U (password from AGENT_CONTROLLER_PASSWORD)
    agent-controller sessions | status ID | log ID [-f] | report ID | notes ID | files ID
    agent-controller download ID [NAME | --zip] [-o DIR]
    agent-controller recording ID [-o FILE]             the session as an animated GIF
    agent-controller confirm ID --yes | --no [--reason TEXT] [--edit COMMAND]
    agent-controller answer ID \"text\"                   answer the question a session asks
    agent-controller stop ID | workers | health
    agent-controller pause ID | resume ID [--note TEXT]  take a session over, hand it back
    agent-controller act ID TOOL JSON                   run one of its tools while it is paused
    agent-controller export ID [--format playwright|sh] [-o FILE]   the run as a script to keep
    agent-controller mcp                                MCP server on stdio (for Claude Code)
    agent-controller skill                              a SKILL.md for coding agents

exit codes: 0 finished/ok, 1 session error, 2 usage, 3 stopped, 4 finished after a denied
confirmation, 5 controller unreachable or API error";

pub(super) struct Out {
    pub json: bool,
    pub color: bool,
}

pub(super) fn isatty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

impl Out {
    pub fn paint(&self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }

    pub fn entry(&self, e: &Value) {
        if self.json {
            println!("{e}");
            return;
        }
        let ts = e["ts"].as_str().and_then(|t| t.get(11..19)).unwrap_or("");
        let kind = e["type"].as_str().unwrap_or("");
        let color = match kind {
            "tool" => "36",
            "result" => "32",
            "error" => "31",
            "confirmation" => "33",
            "assistant" => "1",
            _ => "2",
        };
        let text = shown(e["text"].as_str().unwrap_or(""));
        println!("{} {} {}", self.paint("2", ts), self.paint(color, &format!("{kind:<12}")), text);
    }
}

/// Text from the model or a page, safe for a terminal: escape sequences and other control
/// characters (but newlines and tabs) removed.
pub(super) fn shown(text: &str) -> String {
    crate::util::ansi::printable(text)
}

pub(super) fn fail(e: ClientError) -> u8 {
    eprintln!("agent-controller: {e}");
    exit::UNREACHABLE
}

/// A column of a table: its header, alignment, and the cell of one item.
pub(super) type Column = (&'static str, Align, fn(&Value) -> String);

pub(super) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A JSON array: as JSON, or as a table with a header.
pub(super) fn print_table(v: &Value, out: &Out, columns: &[Column]) {
    if out.json {
        println!("{v}");
        return;
    }
    let header: Vec<(&str, Align)> = columns.iter().map(|(h, a, _)| (*h, *a)).collect();
    let rows: Vec<Vec<String>> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| columns.iter().map(|(_, _, cell)| cell(item)).collect())
        .collect();
    print!("{}", table::render(&header, &rows));
}

pub(super) fn print_status(s: &Value, out: &Out) {
    if out.json {
        println!("{s}");
        return;
    }
    println!("{}  {}", s["session_id"].as_str().unwrap_or(""), s["status"].as_str().unwrap_or(""));
    println!(
        "  {} {} on {}",
        s["mode"].as_str().unwrap_or(""),
        s["type"].as_str().unwrap_or(""),
        s["target"].as_str().unwrap_or("")
    );
    if let Some(i) = s["instruction"].as_str().or(s["goal"].as_str()) {
        println!("  {i}");
    }
    println!(
        "  turn {}/{}, {} file(s), worker {}",
        s["turn"],
        s["max_turns"],
        s["files"],
        s["worker"].as_str().unwrap_or("-")
    );
    if let Some(c) = s["confirmation_pending"].as_object() {
        println!("  waiting for confirmation: {}", shown(c.get("description").and_then(Value::as_str).unwrap_or("")));
    }
    if let Some(q) = s["question_pending"]["question"].as_str() {
        println!("  waiting for an answer: {}", shown(q));
    }
    if let Some(w) = s["waiting_for"].as_str() {
        println!("  waiting for {w}");
    }
    if let Some(reason) = s["takeover_requested"].as_str() {
        println!("  the agent asks a person to take over: {}", shown(reason));
    }
    if let Some(line) = budget_line(&s["budget"]) {
        println!("  {line}");
    }
    for key in ["summary", "error"] {
        if let Some(v) = s[key].as_str() {
            println!("  {key}: {}", shown(v));
        }
    }
}

/// "budget: 500/300 tokens, 12/600 s (tokens reached)": spent beside each limit.
fn budget_line(b: &Value) -> Option<String> {
    let (limit, spent) = (b.get("limit")?, &b["spent"]);
    let mut parts = Vec::new();
    if let Some(t) = limit["tokens"].as_u64() {
        parts.push(format!("{}/{t} tokens", spent["tokens"].as_u64().unwrap_or(0)));
    }
    if let Some(usd) = limit["usd"].as_f64() {
        parts.push(format!("${:.4}/${usd}", spent["usd"].as_f64().unwrap_or(0.0)));
    }
    if let Some(secs) = limit["seconds"].as_u64() {
        parts.push(format!("{}/{secs} s", spent["seconds"].as_u64().unwrap_or(0)));
    }
    let reached = b["exceeded"].as_str().map(|k| format!(" ({k} reached)")).unwrap_or_default();
    Some(format!("budget: {}{reached}", parts.join(", ")))
}

/// Files (not screenshots) of a session into `dir`, one progress line each.
pub(super) fn download(
    client: &ApiClient,
    id: &str,
    name: Option<&str>,
    zip: bool,
    dir: &std::path::Path,
    out: &Out,
) -> u8 {
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("agent-controller: cannot use {}: {e}", dir.display());
        return exit::ERROR;
    }
    let wanted: Vec<(String, String)> = if zip {
        vec![("files/zip".into(), format!("{id}.zip"))]
    } else if let Some(n) = name {
        vec![(format!("files/{}", path_segment(n)), n.to_string())]
    } else {
        match client.get(&format!("/sessions/{id}/files")) {
            Ok(v) => v
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["type"] != "screenshot")
                .filter_map(|f| f["filename"].as_str())
                .map(|f| (format!("files/{}", path_segment(f)), f.to_string()))
                .collect(),
            Err(e) => return fail(e),
        }
    };
    for (path, local) in wanted {
        let local = crate::util::filename::sanitize_filename(&local);
        let mut dest = dir.join(&local);
        let mut n = 2;
        while dest.exists() {
            dest = dir.join(format!("{n}-{local}"));
            n += 1;
        }
        let mut bar = Progress::new(&local, !out.json && isatty(2));
        let result = client.download_with(&format!("/sessions/{id}/{path}"), &dest, &mut |n, of| bar.show(n, of));
        bar.clear();
        match result {
            Ok(size) => {
                if out.json {
                    println!("{}", json!({"downloaded": dest, "bytes": size}));
                } else {
                    println!("  ↓ {} ({} KB)", dest.display(), size.div_ceil(1024));
                }
            }
            Err(e) => return fail(e),
        }
    }
    exit::FINISHED
}

/// How `task`/`explore` answer confirmations: `--yes`, `--no`, or ask on the terminal.
#[derive(Clone, Copy)]
pub(super) struct Answers {
    pub(super) yes: bool,
    pub(super) no: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn model_text_loses_its_escapes() {
        let hostile = "done\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred\u{1b}[0m\u{9b}1m\u{8}\n\tok";
        assert_eq!(super::shown(hostile), "donered1m\n\tok");
    }
}

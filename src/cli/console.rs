//! The console: `task`, `explore` (create a session and follow it) and the rest of the REST API
//! as commands, for a person at a terminal or a script (`--json`).
//!
//! Following prints log lines as they come (colour only on a terminal), asks y/n when a
//! confirmation is pending (with no terminal it needs `--yes` or `--no`), then prints the
//! final status and report and downloads the files into `--out DIR`. Ctrl-C detaches; the
//! session goes on (`agent-controller stop ID` stops it).

use super::client::{ApiClient, ClientError, is_active, path_segment};
use super::follow::Decision;
use super::progress::Progress;
use super::table::{self, Align};
use serde_json::{Value, json};
use std::path::PathBuf;

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
        --worker NAME  --max-turns N  --auto-confirm  --dry-run  --yes | --no  --out DIR  --json
        --approval auto|validator|human  --llm NAME  --model MODEL
        --username U (password from AGENT_CONTROLLER_PASSWORD)
    agent-controller sessions | status ID | log ID [-f] | report ID | notes ID | files ID
    agent-controller download ID [NAME | --zip] [-o DIR]
    agent-controller confirm ID --yes | --no [--reason TEXT] [--edit COMMAND]
    agent-controller answer ID \"text\"                   answer the question a session asks
    agent-controller stop ID | workers | health
    agent-controller pause ID | resume ID [--note TEXT]  take a session over, hand it back
    agent-controller act ID TOOL JSON                   run one of its tools while it is paused
    agent-controller mcp                                MCP server on stdio (for Claude Code)

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
    crate::util::ansi::strip_ansi(text).chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect()
}

pub(super) fn fail(e: ClientError) -> u8 {
    eprintln!("agent-controller: {e}");
    exit::UNREACHABLE
}

/// Run a console command; returns the exit code.
pub fn run(command: &str, mut args: pico_args::Arguments) -> u8 {
    let api: Option<String> = args.opt_value_from_str("--api").unwrap_or(None);
    let token: Option<String> = args.opt_value_from_str("--token").unwrap_or(None);
    let json_out = args.contains("--json");
    let out = Out { json: json_out, color: !json_out && isatty(1) && std::env::var_os("NO_COLOR").is_none() };
    let ca_file: Option<std::path::PathBuf> = args.opt_value_from_str("--ca-file").unwrap_or(None);
    let client = match ApiClient::new(api, token, ca_file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agent-controller: {e}");
            return exit::USAGE;
        }
    };
    let result = match command {
        "task" | "explore" | "replay" => return super::follow::follow_new(command, &client, &out, args),
        "status" | "log" | "report" | "notes" | "files" | "download" | "confirm" | "answer" | "stop" | "pause"
        | "act" | "resume" => {
            return session_command(command, &client, &out, args);
        }
        "sessions" => client.get("/sessions").map(|v| print_table(&v, &out, SESSION_COLUMNS)),
        "workers" => client.get("/workers").map(|v| print_table(&v, &out, WORKER_COLUMNS)),
        "schedule" => return super::schedule::run(&client, &out, args),
        "health" => client.get("/health").map(|v| print_health(&v, &client, &out)),
        _ => {
            eprintln!("agent-controller: unknown command {command:?}\n\n{USAGE}");
            return exit::USAGE;
        }
    };
    exit_code(result)
}

fn exit_code(result: Result<(), ClientError>) -> u8 {
    match result {
        Ok(()) => exit::FINISHED,
        Err(e) => fail(e),
    }
}

/// The commands about one session: `status ID`, `log ID`, … `stop ID`, `pause ID`, `act ID`,
/// `resume ID`.
fn session_command(command: &str, client: &ApiClient, out: &Out, mut args: pico_args::Arguments) -> u8 {
    let follow = args.contains(["-f", "--follow"]);
    let yes = args.contains("--yes");
    let no = args.contains("--no");
    let zip = args.contains("--zip");
    let dir: Option<PathBuf> = args.opt_value_from_str(["-o", "--out"]).unwrap_or(None);
    let reason: Option<String> = args.opt_value_from_str("--reason").unwrap_or(None);
    let edit: Option<String> = args.opt_value_from_str("--edit").unwrap_or(None);
    let note: Option<String> = args.opt_value_from_str("--note").unwrap_or(None);
    let free = args.finish();
    let Some(id) = free.first().and_then(|s| s.to_str()).map(str::to_string) else {
        eprintln!("agent-controller {command}: give a session id (see `agent-controller sessions`)");
        return exit::USAGE;
    };
    let id = path_segment(&id);
    let result = match command {
        "status" => client.get(&format!("/sessions/{id}")).map(|s| print_status(&s, out)),
        "log" => return print_log(client, &id, follow, out),
        "report" => client.get(&format!("/sessions/{id}/report")).map(|v| {
            if out.json { println!("{v}") } else { println!("{}", shown(v["report"].as_str().unwrap_or(""))) }
        }),
        "notes" => client.get(&format!("/sessions/{id}/notes")).map(|v| print_list(&v, out, print_note_line)),
        "files" => client.get(&format!("/sessions/{id}/files")).map(|v| print_table(&v, out, FILE_COLUMNS)),
        "download" => {
            let dir = dir.unwrap_or_else(|| PathBuf::from("."));
            let name = free.get(1).and_then(|s| s.to_str()).map(str::to_string);
            return download(client, &id, name.as_deref(), zip, &dir, out);
        }
        "confirm" if yes == no => {
            eprintln!("agent-controller confirm: say --yes or --no");
            return exit::USAGE;
        }
        "confirm" => answer_confirmation(client, &id, Decision::from_flags(yes, reason, edit)),
        "pause" | "act" | "resume" => {
            let rest: Vec<String> = free.iter().skip(1).map(|s| s.to_string_lossy().into_owned()).collect();
            return super::takeover::run(command, client, out, &id, &rest, note);
        }
        "answer" => {
            let text: Vec<String> = free.iter().skip(1).filter_map(|s| s.to_str().map(str::to_string)).collect();
            if text.is_empty() {
                eprintln!("agent-controller answer: give the answer, e.g. answer ID \"the 2024 report\"");
                return exit::USAGE;
            }
            client
                .post(&format!("/sessions/{id}/answer"), &json!({"text": text.join(" ")}))
                .map(|_| println!("answered"))
        }
        _ => client
            .delete(&format!("/sessions/{id}"))
            .map(|v| if out.json { println!("{v}") } else { println!("stopped {id}") }),
    };
    exit_code(result)
}

fn answer_confirmation(client: &ApiClient, id: &str, decision: Decision) -> Result<(), ClientError> {
    let c = client.get(&format!("/sessions/{id}/confirmation"))?;
    if c["pending"] != true {
        return Err(ClientError::Other(format!("session {id} has no pending confirmation")));
    }
    client.post(&format!("/sessions/{id}/confirmation"), &decision.body(&c["confirmation_id"]))?;
    let said = if matches!(decision, Decision::No(_)) { "denied:" } else { "approved:" };
    println!("{said} {}", shown(c["description"].as_str().unwrap_or("")));
    Ok(())
}

/// A JSON array: as JSON, or one line per item.
fn print_list(v: &Value, out: &Out, line: fn(&Value)) {
    if out.json {
        println!("{v}");
    } else {
        v.as_array().into_iter().flatten().for_each(line);
    }
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

const SESSION_COLUMNS: &[Column] = &[
    ("ID", Align::Left, |s| text_of(&s["session_id"])),
    ("STATUS", Align::Left, |s| text_of(&s["status"])),
    ("MODE", Align::Left, |s| text_of(&s["mode"])),
    ("TYPE", Align::Left, |s| text_of(&s["type"])),
    ("TURN", Align::Right, |s| text_of(&s["turn"])),
    ("TARGET", Align::Left, |s| text_of(&s["target"])),
];

const WORKER_COLUMNS: &[Column] = &[
    ("ID", Align::Left, |w| text_of(&w["worker_id"])),
    ("HOSTNAME", Align::Left, |w| text_of(&w["hostname"])),
    ("CAPABILITIES", Align::Left, |w| {
        w["capabilities"].as_array().map(|c| c.iter().map(text_of).collect::<Vec<_>>().join(",")).unwrap_or_default()
    }),
    ("STATE", Align::Left, |w| if w["connected"] == true { "connected".into() } else { "gone".into() }),
    ("SESSION", Align::Left, |w| text_of(&w["session_id"])),
];

const FILE_COLUMNS: &[Column] = &[
    ("TYPE", Align::Left, |f| text_of(&f["type"])),
    ("SIZE", Align::Right, |f| format!("{} KB", text_of(&f["size_kb"]))),
    ("NAME", Align::Left, |f| text_of(&f["filename"])),
];

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

fn print_note_line(n: &Value) {
    match n["title"].as_str() {
        Some(t) => println!("- {}: {}", shown(t), shown(n["content"].as_str().unwrap_or(""))),
        None => println!("- {}", shown(n["content"].as_str().unwrap_or(""))),
    }
}

fn print_health(v: &Value, client: &ApiClient, out: &Out) {
    if out.json {
        println!("{v}");
    } else {
        println!(
            "ok: controller {} at {}, {} worker(s) connected, sessions {}",
            v["version"].as_str().unwrap_or("?"),
            client.base,
            v["workers"],
            v["sessions"]
        );
    }
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

fn print_log(client: &ApiClient, id: &str, follow: bool, out: &Out) -> u8 {
    let mut after = 0;
    loop {
        let wait = if follow { 20 } else { 0 };
        let page = match client.get(&format!("/sessions/{id}/log?after={after}&wait={wait}")) {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        for e in page["entries"].as_array().into_iter().flatten() {
            out.entry(e);
        }
        let next = page["next"].as_u64().unwrap_or(after);
        let more = next > after;
        after = next;
        if !follow && !more {
            return exit::FINISHED;
        }
        if follow && !more {
            match client.get(&format!("/sessions/{id}")) {
                Ok(s) if !is_active(&s) => return exit::FINISHED,
                Ok(_) => {}
                Err(e) => return fail(e),
            }
        }
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn model_text_loses_its_escapes() {
        let hostile = "done\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred\u{1b}[0m\u{9b}1m\u{8}\n\tok";
        assert_eq!(super::shown(hostile), "donered1m\n\tok");
    }
}

//! The console: `task`, `explore` (create a session and follow it) and the rest of the REST API
//! as commands, for a person at a terminal or a script (`--json`).
//!
//! Following prints log lines as they come (colour only on a terminal), asks y/n when a
//! confirmation is pending (with no terminal it needs `--yes` or `--no`), then prints the
//! final status and report and downloads the files into `--out DIR`. Ctrl-C detaches; the
//! session goes on (`agent-controller stop ID` stops it).

mod replay;

use super::client::{ApiClient, ClientError, is_active, path_segment};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
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
token from --token | AGENT_CONTROLLER_TOKEN):

    agent-controller task --url URL \"instruction\"      a browser task, followed to its end
    agent-controller task --title WINDOW \"instruction\" a desktop-app task
    agent-controller task --host NAME \"instruction\"    a shell task
    agent-controller explore --url URL [--goal G]       explore and print the report
    agent-controller explore --title WINDOW [--goal G]
    agent-controller replay ID [--param NAME=VALUE]… [--instruction TEXT]   re-run a session's steps
        --worker NAME  --max-turns N  --auto-confirm  --dry-run  --yes | --no  --out DIR  --json
        --username U (password from AGENT_CONTROLLER_PASSWORD)
    agent-controller sessions | status ID | log ID [-f] | report ID | notes ID | files ID
    agent-controller download ID [NAME | --zip] [-o DIR]
    agent-controller confirm ID --yes | --no
    agent-controller stop ID | workers | health
    agent-controller mcp                                MCP server on stdio (for Claude Code)

exit codes: 0 finished/ok, 1 session error, 2 usage, 3 stopped, 4 finished after a denied
confirmation, 5 controller unreachable or API error";

struct Out {
    json: bool,
    color: bool,
}

fn isatty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

impl Out {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }

    fn entry(&self, e: &Value) {
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
        let text = e["text"].as_str().unwrap_or("");
        println!("{} {} {}", self.paint("2", ts), self.paint(color, &format!("{kind:<12}")), text);
    }
}

fn fail(e: ClientError) -> u8 {
    eprintln!("agent-controller: {e}");
    exit::UNREACHABLE
}

/// Run a console command; returns the exit code.
pub fn run(command: &str, mut args: pico_args::Arguments) -> u8 {
    let api: Option<String> = args.opt_value_from_str("--api").unwrap_or(None);
    let token: Option<String> = args.opt_value_from_str("--token").unwrap_or(None);
    let json_out = args.contains("--json");
    let out = Out { json: json_out, color: !json_out && isatty(1) && std::env::var_os("NO_COLOR").is_none() };
    let client = ApiClient::new(api, token);
    let result = match command {
        "task" | "explore" | "replay" => return follow_new(command, &client, &out, args),
        "status" | "log" | "report" | "notes" | "files" | "download" | "confirm" | "stop" => {
            return session_command(command, &client, &out, args);
        }
        "sessions" => client.get("/sessions").map(|v| print_list(&v, &out, print_session_line)),
        "workers" => client.get("/workers").map(|v| print_list(&v, &out, print_worker_line)),
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

/// The commands about one session: `status ID`, `log ID`, … `stop ID`.
fn session_command(command: &str, client: &ApiClient, out: &Out, mut args: pico_args::Arguments) -> u8 {
    let follow = args.contains(["-f", "--follow"]);
    let yes = args.contains("--yes");
    let no = args.contains("--no");
    let zip = args.contains("--zip");
    let dir: Option<PathBuf> = args.opt_value_from_str(["-o", "--out"]).unwrap_or(None);
    let free = args.finish();
    let Some(id) = free.first().and_then(|s| s.to_str()).map(str::to_string) else {
        eprintln!("agent-controller {command}: give a session id (see `agent-controller sessions`)");
        return exit::USAGE;
    };
    let id = path_segment(&id);
    let result = match command {
        "status" => client.get(&format!("/sessions/{id}")).map(|s| print_status(&s, out)),
        "log" => return print_log(client, &id, follow, out),
        "report" => client
            .get(&format!("/sessions/{id}/report"))
            .map(|v| if out.json { println!("{v}") } else { println!("{}", v["report"].as_str().unwrap_or("")) }),
        "notes" => client.get(&format!("/sessions/{id}/notes")).map(|v| print_list(&v, out, print_note_line)),
        "files" => client.get(&format!("/sessions/{id}/files")).map(|v| print_list(&v, out, print_file_line)),
        "download" => {
            let dir = dir.unwrap_or_else(|| PathBuf::from("."));
            let name = free.get(1).and_then(|s| s.to_str()).map(str::to_string);
            return download(client, &id, name.as_deref(), zip, &dir, out);
        }
        "confirm" if yes == no => {
            eprintln!("agent-controller confirm: say --yes or --no");
            return exit::USAGE;
        }
        "confirm" => answer_confirmation(client, &id, yes),
        _ => client
            .delete(&format!("/sessions/{id}"))
            .map(|v| if out.json { println!("{v}") } else { println!("stopped {id}") }),
    };
    exit_code(result)
}

fn answer_confirmation(client: &ApiClient, id: &str, yes: bool) -> Result<(), ClientError> {
    let c = client.get(&format!("/sessions/{id}/confirmation"))?;
    if c["pending"] != true {
        return Err(ClientError::Other(format!("session {id} has no pending confirmation")));
    }
    let answer = json!({"confirmation_id": c["confirmation_id"], "approved": yes});
    client.post(&format!("/sessions/{id}/confirmation"), &answer)?;
    println!("{} {}", if yes { "approved:" } else { "denied:" }, c["description"].as_str().unwrap_or(""));
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

fn print_session_line(s: &Value) {
    println!(
        "{}  {:<10} {:<7} {:<7} turn {:<4} {}",
        s["session_id"].as_str().unwrap_or(""),
        s["status"].as_str().unwrap_or(""),
        s["mode"].as_str().unwrap_or(""),
        s["type"].as_str().unwrap_or(""),
        s["turn"],
        s["target"].as_str().unwrap_or("")
    );
}

fn print_note_line(n: &Value) {
    match n["title"].as_str() {
        Some(t) => println!("- {t}: {}", n["content"].as_str().unwrap_or("")),
        None => println!("- {}", n["content"].as_str().unwrap_or("")),
    }
}

fn print_file_line(f: &Value) {
    println!(
        "{:<11} {:>8} KB  {}",
        f["type"].as_str().unwrap_or(""),
        f["size_kb"],
        f["filename"].as_str().unwrap_or("")
    );
}

fn print_worker_line(w: &Value) {
    println!(
        "{}  {:<20} {:<14} {:<12} {}",
        w["worker_id"].as_str().unwrap_or(""),
        w["hostname"].as_str().unwrap_or(""),
        w["capabilities"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
            .unwrap_or_default(),
        if w["connected"] == true { "connected" } else { "gone" },
        w["session_id"].as_str().map(|s| format!("serving {s}")).unwrap_or_default()
    );
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

fn print_status(s: &Value, out: &Out) {
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
        println!("  waiting for confirmation: {}", c.get("description").and_then(Value::as_str).unwrap_or(""));
    }
    for key in ["summary", "error"] {
        if let Some(v) = s[key].as_str() {
            println!("  {key}: {v}");
        }
    }
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
fn download(client: &ApiClient, id: &str, name: Option<&str>, zip: bool, dir: &std::path::Path, out: &Out) -> u8 {
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
        match client.download(&format!("/sessions/{id}/{path}"), &dest) {
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

/// `task` / `explore`: create the session, follow it, answer confirmations, fetch the files.
/// How `task`/`explore` answer confirmations: `--yes`, `--no`, or ask on the terminal.
#[derive(Clone, Copy)]
struct Answers {
    yes: bool,
    no: bool,
}

fn follow_new(command: &str, client: &ApiClient, out: &Out, args: pico_args::Arguments) -> u8 {
    let (body, out_dir, answers) = match new_session_body(command, args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("agent-controller {command}: {message}\n\n{USAGE}");
            return exit::USAGE;
        }
    };
    let (path, body) = match body.as_object().and_then(|b| b.get("replay_of")).and_then(Value::as_str) {
        Some(source) => (
            format!("/sessions/{}/replay", path_segment(source)),
            json!({"params": body["params"], "instruction": body["instruction"]}),
        ),
        None => ("/sessions".to_string(), body),
    };
    let created = match client.post(&path, &body) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let id = created["session_id"].as_str().unwrap_or("").to_string();
    if out.json {
        println!("{}", json!({"session_id": id, "status": created["status"]}));
    } else {
        let target = created["target"].as_str().unwrap_or("");
        println!("session {id} ({command} on {target}); Ctrl-C detaches, `agent-controller stop {id}` stops it");
    }
    let (final_state, denied) = match follow(client, out, &id, answers) {
        Ok(done) => done,
        Err(code) => return code,
    };
    print_outcome(client, out, &id, &final_state);
    if let Some(dir) = out_dir {
        let code = download(client, &path_segment(&id), None, false, &dir, out);
        if code != exit::FINISHED {
            return code;
        }
    }
    match final_state["status"].as_str().unwrap_or("") {
        "finished" if denied => exit::DENIED,
        "finished" => exit::FINISHED,
        "stopped" => exit::STOPPED,
        _ => exit::ERROR,
    }
}

/// The `POST /sessions` body from the command line, the `--out` folder, and how to answer.
fn new_session_body(
    command: &str,
    mut args: pico_args::Arguments,
) -> Result<(Value, Option<PathBuf>, Answers), String> {
    if command == "replay" {
        return replay::body(args);
    }
    let url: Option<String> = args.opt_value_from_str("--url").unwrap_or(None);
    let title: Option<String> = args.opt_value_from_str("--title").unwrap_or(None);
    let host: Option<String> = args.opt_value_from_str("--host").unwrap_or(None);
    let goal: Option<String> = args.opt_value_from_str("--goal").unwrap_or(None);
    let worker: Option<String> = args.opt_value_from_str("--worker").unwrap_or(None);
    let username: Option<String> = args.opt_value_from_str("--username").unwrap_or(None);
    let max_turns: Option<u32> = args.opt_value_from_str("--max-turns").map_err(|e| e.to_string())?;
    let out_dir: Option<PathBuf> = args.opt_value_from_str(["-o", "--out"]).unwrap_or(None);
    let auto = args.contains("--auto-confirm");
    let dry_run = args.contains("--dry-run");
    let answers = Answers { yes: args.contains("--yes"), no: args.contains("--no") };
    if answers.yes && answers.no {
        return Err("--yes and --no together".into());
    }
    let free: Vec<String> = args.finish().into_iter().filter_map(|s| s.into_string().ok()).collect();
    let (target, kind) = match (url, title, host) {
        (Some(u), None, None) => (u, "browser"),
        (None, Some(t), None) => (t, "app"),
        (None, None, Some(h)) => (h, "shell"),
        _ => return Err("give exactly one of --url, --title or --host".into()),
    };
    let mut body = json!({"mode": command, "target": target, "type": kind});
    if command == "task" {
        let instruction = free.join(" ");
        if instruction.trim().is_empty() {
            return Err("say what to do, e.g. task --url https://example.com \"download all PDFs\"".into());
        }
        body["instruction"] = json!(instruction);
    } else if let Some(g) = goal.or_else(|| (!free.is_empty()).then(|| free.join(" "))) {
        body["goal"] = json!(g);
    }
    if let Some(w) = worker {
        body["worker"] = json!(w);
    }
    if let Some(u) = username {
        let Some(password) = std::env::var("AGENT_CONTROLLER_PASSWORD").ok().filter(|p| !p.is_empty()) else {
            return Err("--username needs the password in AGENT_CONTROLLER_PASSWORD (never on the command line)".into());
        };
        body["credentials"] = json!({"username": u, "password": password});
    }
    let mut options = json!({"auto_confirm": auto});
    if dry_run {
        options["dry_run"] = json!(true);
    }
    if let Some(n) = max_turns {
        options["max_turns"] = json!(n);
    }
    body["options"] = options;
    Ok((body, out_dir, answers))
}

/// Print the log as it comes and answer confirmations until the session ends: its final
/// state, and whether a confirmation was denied.
fn follow(client: &ApiClient, out: &Out, id: &str, answers: Answers) -> Result<(Value, bool), u8> {
    let mut after = 0;
    let mut answered: Vec<String> = Vec::new();
    let mut denied = false;
    loop {
        let page = client.get(&format!("/sessions/{id}/log?after={after}&wait=5")).map_err(fail)?;
        for e in page["entries"].as_array().into_iter().flatten() {
            out.entry(e);
        }
        after = page["next"].as_u64().unwrap_or(after);
        let s = client.get(&format!("/sessions/{id}")).map_err(fail)?;
        if let Some(c) = s["confirmation_pending"].as_object() {
            let cid = c.get("confirmation_id").and_then(Value::as_str).unwrap_or("").to_string();
            if !answered.contains(&cid) {
                denied |= !answer_pending(client, out, id, c, answers)?;
                answered.push(cid);
            }
        }
        if !is_active(&s) {
            // Entries written at the very end.
            if let Ok(page) = client.get(&format!("/sessions/{id}/log?after={after}")) {
                for e in page["entries"].as_array().into_iter().flatten() {
                    out.entry(e);
                }
            }
            return Ok((s, denied));
        }
    }
}

/// Answer the pending confirmation `c`; whether it was approved.
fn answer_pending(
    client: &ApiClient,
    out: &Out,
    id: &str,
    c: &serde_json::Map<String, Value>,
    answers: Answers,
) -> Result<bool, u8> {
    let approved = if answers.yes {
        true
    } else if answers.no {
        false
    } else if isatty(0) {
        ask(c, out)
    } else {
        eprintln!(
            "agent-controller: session {id} asks for a confirmation ({}), but there is no terminal to ask on.\n\
             Run with --yes or --no, or answer with `agent-controller confirm {id} --yes|--no`.",
            c.get("description").and_then(Value::as_str).unwrap_or("")
        );
        return Err(exit::USAGE);
    };
    let cid = c.get("confirmation_id").and_then(Value::as_str).unwrap_or("");
    let r =
        client.post(&format!("/sessions/{id}/confirmation"), &json!({"confirmation_id": cid, "approved": approved}));
    if let Err(e) = r {
        eprintln!("agent-controller: the answer was not taken: {e}");
    }
    Ok(approved)
}

/// The final state and the report.
fn print_outcome(client: &ApiClient, out: &Out, id: &str, final_state: &Value) {
    if out.json {
        println!("{final_state}");
        return;
    }
    println!();
    print_status(final_state, out);
    if let Ok(r) = client.get(&format!("/sessions/{id}/report")) {
        if let Some(text) = r["report"].as_str().filter(|t| !t.is_empty()) {
            println!("\n{text}");
        }
    }
}

/// Ask on the terminal until the answer is y or n.
fn ask(c: &serde_json::Map<String, Value>, out: &Out) -> bool {
    let risk = c.get("risk_level").and_then(Value::as_str).unwrap_or("medium");
    println!(
        "\n{} {}",
        out.paint("33;1", &format!("Confirmation needed ({risk} risk):")),
        c.get("description").and_then(Value::as_str).unwrap_or("")
    );
    match c.get("details") {
        Some(Value::Array(items)) => {
            for d in items {
                println!("  - {}", d.as_str().map(str::to_string).unwrap_or_else(|| d.to_string()));
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => println!("  {other}"),
    }
    let stdin = std::io::stdin();
    loop {
        print!("Approve? [y/n] ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return true,
            "n" | "no" => return false,
            _ => println!("please answer y or n"),
        }
    }
}

//! The console: `task`, `explore` (create a session and follow it) and the rest of the REST API
//! as commands, for a person at a terminal or a script (`--json`).
//!
//! Following prints log lines as they come (colour only on a terminal), asks y/n when a
//! confirmation is pending (with no terminal it needs `--yes` or `--no`), then prints the
//! final status and report and downloads the files into `--out DIR`. Ctrl-C detaches; the
//! session goes on (`agent-controller stop ID` stops it).

use super::args::Parsed;
use super::client::{ApiClient, ClientError, is_active, path_segment};
use super::common::{Column, Out, download, fail, isatty, print_status, print_table, shown, text_of};
use super::follow::Decision;
use super::table::Align;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Documented exit codes, and the usage text (kept in `common.rs`, which every command uses).
pub use super::common::{USAGE, exit};

/// Run a console command, its command line read (`args::parse`); returns the exit code.
pub fn run(parsed: &Parsed) -> u8 {
    let json_out = parsed.flag("--json");
    let out = Out { json: json_out, color: !json_out && isatty(1) && std::env::var_os("NO_COLOR").is_none() };
    let (api, token) = (parsed.value("--api").map(str::to_string), parsed.value("--token").map(str::to_string));
    let client = match ApiClient::new(api, token, parsed.value("--ca-file").map(PathBuf::from)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agent-controller: {e}");
            return exit::USAGE;
        }
    };
    let command = parsed.command.name;
    let result = match command {
        "task" | "explore" | "replay" => return super::follow::follow_new(&client, &out, parsed),
        "status" | "log" | "report" | "notes" | "files" | "download" | "confirm" | "answer" | "stop" | "pause"
        | "act" | "resume" => {
            return session_command(&client, &out, parsed);
        }
        "sessions" => client.get("/sessions").map(|v| print_table(&v, &out, SESSION_COLUMNS)),
        "workers" => client.get("/workers").map(|v| print_table(&v, &out, WORKER_COLUMNS)),
        "profiles" => return profiles(&client, &out, &parsed.free),
        "schedule" => return super::schedule::run(&client, &out, parsed),
        "export" => return super::export::run(&client, &out, parsed),
        "recording" => return super::recording::run(&client, &out, parsed),
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
/// `resume ID` (the parser saw to the id and the argument counts).
fn session_command(client: &ApiClient, out: &Out, parsed: &Parsed) -> u8 {
    let command = parsed.command.name;
    let id = path_segment(&parsed.free[0]);
    let rest = &parsed.free[1..];
    let result = match command {
        "status" => client.get(&format!("/sessions/{id}")).map(|s| print_status(&s, out)),
        "log" => return print_log(client, &id, parsed.flag("--follow"), out),
        "report" => client.get(&format!("/sessions/{id}/report")).map(|v| {
            if out.json { println!("{v}") } else { println!("{}", shown(v["report"].as_str().unwrap_or(""))) }
        }),
        "notes" => client.get(&format!("/sessions/{id}/notes")).map(|v| print_list(&v, out, print_note_line)),
        "files" => client.get(&format!("/sessions/{id}/files")).map(|v| print_table(&v, out, FILE_COLUMNS)),
        "download" => {
            let dir = parsed.value("--out").map_or_else(|| PathBuf::from("."), PathBuf::from);
            return download(client, &id, rest.first().map(String::as_str), parsed.flag("--zip"), &dir, out);
        }
        "confirm" => {
            let (yes, no) = (parsed.flag("--yes"), parsed.flag("--no"));
            if yes == no {
                eprintln!("agent-controller confirm: say --yes or --no");
                return exit::USAGE;
            }
            let (reason, edit) = (parsed.value("--reason"), parsed.value("--edit"));
            answer_confirmation(
                client,
                &id,
                Decision::from_flags(yes, reason.map(str::to_string), edit.map(str::to_string)),
            )
        }
        "pause" | "act" => return super::takeover::run(command, client, out, &id, rest, None),
        "resume" => {
            return super::takeover::run(command, client, out, &id, rest, parsed.value("--note").map(str::to_string));
        }
        "answer" => client
            .post(&format!("/sessions/{id}/answer"), &json!({"text": rest.join(" ")}))
            .map(|_| println!("answered")),
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

/// `profiles` (a table) and `profiles rm NAME`.
fn profiles(client: &ApiClient, out: &Out, free: &[String]) -> u8 {
    let result = match free {
        [] => client.get("/profiles").map(|v| print_table(&v, out, PROFILE_COLUMNS)),
        [rm, name] if rm == "rm" => client
            .delete(&format!("/profiles/{}", path_segment(name)))
            .map(|v| if out.json { println!("{v}") } else { println!("deleted browser profile {}", shown(name)) }),
        _ => {
            eprintln!("agent-controller profiles: say `profiles` or `profiles rm NAME`");
            return exit::USAGE;
        }
    };
    exit_code(result)
}

const PROFILE_COLUMNS: &[Column] = &[
    ("NAME", Align::Left, |p| text_of(&p["name"])),
    ("WORKER", Align::Left, |p| text_of(&p["worker"])),
    ("IN USE", Align::Left, |p| text_of(&p["in_use"])),
    ("SIZE", Align::Right, |p| format!("{} KB", text_of(&p["size_kb"]))),
    ("LAST USED", Align::Left, |p| text_of(&p["last_used"])),
];

const FILE_COLUMNS: &[Column] = &[
    ("TYPE", Align::Left, |f| text_of(&f["type"])),
    ("SIZE", Align::Right, |f| format!("{} KB", text_of(&f["size_kb"]))),
    ("NAME", Align::Left, |f| text_of(&f["filename"])),
];

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

//! `task` and `explore`: create a session and follow it to its end — its log as it comes, a
//! person's answers to its confirmations (y/n, a reason, or an edited command) and questions
//! on the terminal (or `--yes`/`--no` without one), then the final state, the report and the
//! files. Ctrl-C only detaches: the session goes on.

use super::args::Parsed;
use super::client::{ApiClient, is_active, path_segment};
use super::common::{Answers, Out, USAGE, download, exit, fail, isatty, print_status, shown};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// A person's answer to a confirmation.
pub(super) enum Decision {
    Yes,
    No(Option<String>),
    /// Approve this command instead.
    Edit(String),
}

impl Decision {
    pub(super) fn from_flags(yes: bool, reason: Option<String>, edit: Option<String>) -> Decision {
        match (yes, edit) {
            (true, Some(e)) => Decision::Edit(e),
            (true, None) => Decision::Yes,
            (false, _) => Decision::No(reason),
        }
    }

    pub(super) fn body(&self, confirmation_id: &Value) -> Value {
        match self {
            Decision::Yes => json!({"confirmation_id": confirmation_id, "approved": true}),
            Decision::No(None) => json!({"confirmation_id": confirmation_id, "approved": false}),
            Decision::No(Some(r)) => json!({"confirmation_id": confirmation_id, "approved": false, "reason": r}),
            Decision::Edit(e) => json!({"confirmation_id": confirmation_id, "approved": true, "edited_command": e}),
        }
    }
}

/// `task` / `explore`: create the session, follow it, answer confirmations, fetch the files.
pub(super) fn follow_new(client: &ApiClient, out: &Out, parsed: &Parsed) -> u8 {
    let command = parsed.command.name;
    let (body, out_dir, answers) = match new_session_body(parsed) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("agent-controller {command}: {message}\n\n{USAGE}");
            return exit::USAGE;
        }
    };
    // `replay` posts to the session it replays.
    let (path, body) = match body.as_object().and_then(|b| b.get("replay_of")).and_then(Value::as_str) {
        Some(source) => (
            format!("/sessions/{}/replay", path_segment(source)),
            json!({"params": body["params"], "instruction": body["instruction"]}),
        ),
        None => ("/sessions".to_string(), body),
    };
    let mut body = body;
    let files: Vec<PathBuf> = match body.as_object_mut().and_then(|b| b.remove("input_paths")) {
        Some(Value::Array(paths)) => paths.iter().filter_map(Value::as_str).map(PathBuf::from).collect(),
        _ => Vec::new(),
    };
    let created = match client.post(&path, &body) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let id = created["session_id"].as_str().unwrap_or("").to_string();
    // The session waits for these (its `inputs`) before it starts.
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let put = format!("/sessions/{}/inputs/{}", path_segment(&id), path_segment(name));
        if let Err(e) = client.put_file(&put, file) {
            let _ = client.delete(&format!("/sessions/{}", path_segment(&id)));
            return fail(e);
        }
    }
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
fn new_session_body(parsed: &Parsed) -> Result<(Value, Option<PathBuf>, Answers), String> {
    let command = parsed.command.name;
    if command == "replay" {
        return super::replay::body(parsed);
    }
    let text = |long: &str| parsed.value(long).map(str::to_string);
    let (url, title, host, ssh) = (text("--url"), text("--title"), text("--host"), text("--ssh"));
    let answers = Answers { yes: parsed.flag("--yes"), no: parsed.flag("--no") };
    if answers.yes && answers.no {
        return Err("--yes and --no together".into());
    }
    let free = &parsed.free;
    let (target, kind) = match (url, title, host, ssh) {
        (Some(u), None, None, None) => (u, "browser"),
        (None, Some(t), None, None) => (t, "app"),
        (None, None, Some(h), None) => (h, "shell"),
        (None, None, None, Some(s)) => (format!("ssh://{}", s.trim_start_matches("ssh://")), "shell"),
        _ => return Err("give exactly one of --url, --title, --host or --ssh".into()),
    };
    let mut body = json!({"mode": command, "target": target, "type": kind});
    if command == "task" {
        let instruction = free.join(" ");
        if instruction.trim().is_empty() {
            return Err("say what to do, e.g. task --url https://example.com \"download all PDFs\"".into());
        }
        body["instruction"] = json!(instruction);
    } else if let Some(g) = text("--goal").or_else(|| (!free.is_empty()).then(|| free.join(" "))) {
        body["goal"] = json!(g);
    }
    if let Some(w) = text("--worker") {
        body["worker"] = json!(w);
    }
    if let Some(u) = text("--username") {
        let Some(password) = std::env::var("AGENT_CONTROLLER_PASSWORD").ok().filter(|p| !p.is_empty()) else {
            return Err("--username needs the password in AGENT_CONTROLLER_PASSWORD (never on the command line)".into());
        };
        body["credentials"] = json!({"username": u, "password": password});
    }
    for key in ["llm", "model"] {
        if let Some(v) = text(&format!("--{key}")) {
            body[key] = json!(v);
        }
    }
    body["options"] = session_options(parsed)?;
    // Only a task is handed files.
    let files = if command == "task" { parsed.values("--file") } else { Vec::new() };
    hand_over(&mut body, &files, text("--profile"))?;
    Ok((body, parsed.value("--out").map(PathBuf::from), answers))
}

/// The body's `options` from `--auto-confirm`, `--approval`, `--dry-run`, `--allow-domain` and
/// `--max-turns`.
fn session_options(parsed: &Parsed) -> Result<Value, String> {
    let mut options = json!({"auto_confirm": parsed.flag("--auto-confirm")});
    if let Some(a) = parsed.value("--approval") {
        if !["auto", "validator", "human"].contains(&a) {
            return Err(format!("--approval is auto, validator or human, not {a:?}"));
        }
        options["approval"] = json!(a);
    }
    if parsed.flag("--dry-run") {
        options["dry_run"] = json!(true);
    }
    let allowed = parsed.values("--allow-domain");
    if !allowed.is_empty() {
        options["allowed_domains"] = json!(allowed);
    }
    if let Some(n) = parsed.parse::<u32>("--max-turns").map_err(|e| e.0)? {
        options["max_turns"] = json!(n);
    }
    Ok(options)
}

/// `--file` (the inputs, and the paths `follow_new` sends) and `--profile` into the body.
fn hand_over(body: &mut Value, files: &[String], profile: Option<String>) -> Result<(), String> {
    if let Some(p) = profile {
        body["options"]["browser_profile"] = json!(p);
    }
    if !files.is_empty() {
        body["inputs"] = json!(input_names(files)?);
        body["input_paths"] = json!(files);
    }
    Ok(())
}

/// The input names of `--file` paths: each a readable file whose own name is a valid input
/// name, each name once.
fn input_names(files: &[String]) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for f in files.iter().map(std::path::Path::new) {
        if !f.is_file() {
            return Err(format!("--file {}: no such file", f.display()));
        }
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        crate::protocol::profiles::check_input_name(&name).map_err(|e| format!("--file {}: {e}", f.display()))?;
        if names.contains(&name) {
            return Err(format!("--file: two files are named {name:?}"));
        }
        names.push(name);
    }
    Ok(names)
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
        if let Some(q) = s["question_pending"].as_object() {
            let qid = q.get("question_id").and_then(Value::as_str).unwrap_or("").to_string();
            if !answered.contains(&qid) {
                answer_question(client, out, id, q);
                answered.push(qid);
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
    let decision = if answers.yes {
        Decision::Yes
    } else if answers.no {
        Decision::No(None)
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
    let cid = json!(c.get("confirmation_id").and_then(Value::as_str).unwrap_or(""));
    if let Err(e) = client.post(&format!("/sessions/{id}/confirmation"), &decision.body(&cid)) {
        eprintln!("agent-controller: the answer was not taken: {e}");
    }
    Ok(!matches!(decision, Decision::No(_)))
}

/// The agent asks a person: read the answer on the terminal, or say how to give it.
fn answer_question(client: &ApiClient, out: &Out, id: &str, q: &serde_json::Map<String, Value>) {
    let question = shown(q.get("question").and_then(Value::as_str).unwrap_or(""));
    if !isatty(0) {
        eprintln!("agent-controller: session {id} asks: {question}\nAnswer with `agent-controller answer {id} \"…\"`.");
        return;
    }
    println!("\n{} {question}", out.paint("33;1", "The agent asks:"));
    let Some(text) = read_line("Answer: ") else { return };
    if let Err(e) = client.post(&format!("/sessions/{id}/answer"), &json!({"text": text})) {
        eprintln!("agent-controller: the answer was not taken: {e}");
    }
}

/// One line from the terminal, trimmed; `None` at end of input.
fn read_line(prompt: &str) -> Option<String> {
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
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
            println!("\n{}", shown(text));
        }
    }
}

/// Ask on the terminal until the answer is y or n.
fn ask(c: &serde_json::Map<String, Value>, out: &Out) -> Decision {
    let risk = c.get("risk_level").and_then(Value::as_str).unwrap_or("medium");
    println!(
        "\n{} {}",
        out.paint("33;1", &format!("Confirmation needed ({risk} risk):")),
        shown(c.get("description").and_then(Value::as_str).unwrap_or(""))
    );
    match c.get("details") {
        Some(Value::Array(items)) => {
            for d in items {
                println!("  - {}", shown(&d.as_str().map(str::to_string).unwrap_or_else(|| d.to_string())));
            }
        }
        Some(Value::Object(d)) if d.contains_key("command") => {
            for key in ["command", "cwd", "reason"] {
                if let Some(v) = d.get(key).and_then(Value::as_str) {
                    println!("  {key}: {}", shown(v));
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => println!("  {other}"),
    }
    // A command can be approved as the person edits it.
    let editable = c.get("details").is_some_and(|d| d["command"].is_string());
    let prompt = if editable { "Approve? [y/n/e(dit)] " } else { "Approve? [y/n] " };
    loop {
        let Some(line) = read_line(prompt) else { return Decision::No(None) };
        match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Decision::Yes,
            "n" | "no" => return Decision::No(read_line("Reason (optional): ").filter(|r| !r.is_empty())),
            "e" | "edit" if editable => {
                if let Some(cmd) = read_line("Command to run instead: ").filter(|c| !c.is_empty()) {
                    return Decision::Edit(cmd);
                }
            }
            _ => println!("please answer y or n{}", if editable { " or e" } else { "" }),
        }
    }
}

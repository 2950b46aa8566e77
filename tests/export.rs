//! A run exported as a script that runs, through the real daemon, agent-worker and Chromium: a
//! session that fills and sends a form and signs in with stored credentials exports a Playwright
//! script, which run with `--browser` on the system's Chromium sends the site the same forms
//! with the same values and holds no secret; a shell session exports its commands in order with
//! their approvals, and the script does what they did; `agent-controller skill` prints a
//! SKILL.md whose front matter parses and whose commands are the command table's.

use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(90), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!s["status"].as_str().is_some_and(|st| ["waiting", "running", "confirming"].contains(&st))).then_some(s)
    })
}

/// Python with Playwright (scripts/install-test-deps.sh installs it with pip).
fn have_python_playwright() -> bool {
    let ok = Command::new("python3").args(["-c", "import playwright.sync_api"]).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED running the script: python3 cannot import playwright (pip install playwright)");
    }
    ok
}

#[test]
fn a_browser_run_exports_as_a_playwright_script_that_sends_the_same_forms() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    // The session opens /form itself (step 1); then the model fills and sends it, and signs in.
    let script = vec![
        tools(
            Some("I type the name into the order form."),
            &[("browser_type", json!({"selector": "ref=e1", "text": "Zoe"}))],
        ),
        tool("browser_select_option", json!({"selector": "ref=e2", "value": "Green"})),
        tool("browser_click", json!({"selector": "ref=e3"})),
        tools(Some("Now I send the order."), &[("browser_click", json!({"selector": "ref=e4"}))]),
        tool("perform_login", json!({})),
        tool("finish_task", json!({"summary": "ordered for Zoe and signed in"})),
    ];
    let dir = TempDir::new("export-browser");
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "export-box", "browser");
    let c = d.client();
    let body = json!({"mode": "task", "target": format!("{}/form", site.url), "instruction": "order for Zoe, then sign in",
        "credentials": {"username": "alice@example.test", "password": "s3cret-pw", "login_url": format!("{}/login", site.url)}});
    let id = create_session(&c, body);
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    let by_session = site.posted.lock().unwrap().clone();
    assert_eq!(by_session.len(), 2, "the order and the login: {by_session:?}");
    assert!(by_session[0].starts_with("/submit name=Zoe&color=g&gift=yes"), "{by_session:?}");

    let r = c.get(&format!("/sessions/{id}/export?format=playwright"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("content-type").unwrap_or("").starts_with("text/x-python"), "{:?}", r.headers);
    assert!(r.header("content-disposition").unwrap_or("").contains(&format!("{id}.py")), "{:?}", r.headers);
    let py = r.text();
    for secret in ["s3cret-pw", "alice@example.test"] {
        assert!(!py.contains(secret), "the script holds no credential: {py}");
    }
    assert!(!py.contains("ref=e"), "locators, not refs: {py}");
    for line in [
        "page.get_by_placeholder(\"Your name\").fill(args.v1)",
        "page.get_by_label(\"Gift wrap\").click()",
        "page.get_by_role(\"button\", name=\"Send order\").click()",
        "page.get_by_label(\"Password\").fill(secret(\"LOGIN_PASSWORD\"))",
        "# the model: Now I send the order.",
        "#   LOGIN_PASSWORD  step ",
    ] {
        assert!(py.contains(line), "{line:?} in:\n{py}");
    }
    let folder = TempDir::new("export-run");
    let file = folder.path().join("run.py");
    std::fs::write(&file, &py).unwrap();
    let compiled = Command::new("python3").args(["-m", "py_compile"]).arg(&file).output().unwrap();
    assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));
    if !have_python_playwright() {
        return;
    }
    let help = Command::new("python3").arg(&file).arg("--help").output().unwrap();
    let help_text = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.status.success() && help_text.contains("LOGIN_PASSWORD") && help_text.contains("--browser"),
        "{help_text}"
    );
    let missing = Command::new("python3")
        .arg(&file)
        .args(["--browser", "/usr/bin/chromium"])
        .env_remove("LOGIN_PASSWORD")
        .output()
        .unwrap();
    assert!(!missing.status.success(), "a secret not set stops it before it starts");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("LOGIN_PASSWORD"), "{missing:?}");
    assert_eq!(site.posted.lock().unwrap().len(), 2, "nothing was sent without the secret");

    let ran = Command::new("python3")
        .arg(&file)
        .args(["--browser", "/usr/bin/chromium"])
        .env("LOGIN_USERNAME", "alice@example.test")
        .env("LOGIN_PASSWORD", "s3cret-pw")
        .current_dir(folder.path())
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}\n{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    let posted = site.posted.lock().unwrap().clone();
    assert_eq!(posted[2..], by_session[..], "the script sent the same forms with the same values: {posted:?}");

    // A recorded value is an option: another name, the same steps.
    let other = Command::new("python3")
        .arg(&file)
        .args(["--browser", "/usr/bin/chromium", "--typed-into-your-name", "Max"])
        .env("LOGIN_USERNAME", "alice@example.test")
        .env("LOGIN_PASSWORD", "s3cret-pw")
        .output()
        .unwrap();
    assert!(other.status.success(), "{}", String::from_utf8_lossy(&other.stderr));
    assert!(site.posted.lock().unwrap()[4].starts_with("/submit name=Max&color=g&gift=yes"));
}

/// What a step set by its meaning is exported as the field holds it (a date as `2026-03-05`, a
/// select's option value, a slider's number, an ARIA slider by its keys), a radio named by another radio's label as the
/// radio that was checked, and a field in a frame through its frame: the script sends the
/// same two forms.
#[test]
fn dates_sliders_radios_selects_and_frames_export_as_they_were_set() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let script = vec![
        // The frame comes first on the page (e1), then its field and button.
        tool("browser_type", json!({"selector": "ref=e2", "text": "Zoe Card"})),
        tool("browser_click", json!({"selector": "ref=e3"})),
        tool(
            "browser_fill_form",
            json!({"fields": [{"selector": "#when", "value": "March 5, 2026"}, {"selector": "#volume", "value": "7"},
                {"selector": "#std", "value": "Express", "type": "radio"}]}),
        ),
        tool("browser_select_option", json!({"selector": "#size", "value": "large"})),
        tool("browser_type", json!({"selector": "#stars", "text": "4"})),
        tool("request_takeover", json!({"reason": "the date is yours to say"})),
        tool("browser_click", json!({"selector": "form > button"})),
        tool("finish_task", json!({"summary": "booked"})),
    ];
    let dir = TempDir::new("export-kinds");
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = RealWorker::start(&d, "export-kinds", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{}/booking", site.url), "instruction": "book with the card",
            "options": {"guards": {"radio_by_label": true}}}),
    );
    // A person changes the date: what the field made of it stays out of the record.
    wait_status(&c, &id, "paused");
    let act = json!({"tool": "browser_type", "input": {"selector": "#when", "text": "April 9, 2026"}});
    assert_eq!(c.post(&format!("/sessions/{id}/act"), &act).status, 200);
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(&id).join(name)).unwrap();
    let steps = read("steps.jsonl");
    assert!(steps.contains("2026-03-05"), "the model's own date is kept as the field holds it: {steps}");
    for record in [steps, read("log.jsonl"), read("conversation.jsonl")] {
        assert!(!record.contains("2026-04-09") && !record.contains("April 9"), "{record}");
    }
    let by_session = site.posted.lock().unwrap().clone();
    assert_eq!(
        by_session,
        ["/submit holder=Zoe+Card", "/submit when=2026-04-09&volume=7&ship=exp&size=l&stars=4"],
        "{:?}",
        c.get(&format!("/sessions/{id}/log")).json()
    );

    let py = c.get(&format!("/sessions/{id}/export?format=playwright")).text();
    for line in [
        "page.frame_locator(\"#pay\").get_by_label(\"Card holder\").fill(args.v1)",
        "page.frame_locator(\"#pay\").get_by_role(\"button\", name=\"Save card\").click()",
        "page.get_by_label(\"Express\").check()",
        "default=\"2026-03-05\"",
        "default=\"l\"",
        "page.get_by_label(\"Delivery date\").fill(secret(\"TYPED_1\"))",
        "step_to(page.get_by_role(\"slider\", name=\"Stars\"), args.v5)",
    ] {
        assert!(py.contains(line), "{line:?} in:\n{py}");
    }
    if !have_python_playwright() {
        return;
    }
    let folder = TempDir::new("export-kinds-run");
    let file = folder.path().join("run.py");
    std::fs::write(&file, &py).unwrap();
    let ran = Command::new("python3")
        .arg(&file)
        .args(["--browser", "/usr/bin/chromium"])
        .env("TYPED_1", "2026-04-09")
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}\n{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    assert_eq!(site.posted.lock().unwrap()[2..], by_session[..], "the script sent the same forms");
}

#[test]
fn export_errors_are_json_and_the_console_writes_the_file() {
    let script = vec![tool("finish_task", json!({"summary": "nothing to do"}))];
    let dir = TempDir::new("export-errors");
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let answer = |_: &Value| json!({"success": true, "data": {"stdout": "", "stderr": "", "exit_code": 0}});
    let _w = ScriptedWorker::start(&d.worker_client(), "box", &["shell"], false, answer);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "type": "shell", "target": "box", "instruction": "nothing"}));
    assert_eq!(ended(&c, &id)["status"], "finished");
    assert_error(&c.get(&format!("/sessions/{id}/export?format=pdf")), 400, "bad_request");
    let wrong = c.get(&format!("/sessions/{id}/export?format=playwright"));
    assert_error(&wrong, 400, "bad_request");
    assert!(wrong.text().contains("format=sh"), "{}", wrong.text());
    assert_error(&c.get("/sessions/sess_nope/export"), 404, "not_found");

    // No acting step: a script that says so, and runs.
    let sh = c.get(&format!("/sessions/{id}/export"));
    assert_eq!(sh.status, 200, "{}", sh.text());
    assert!(sh.text().contains("has no commands to run again"), "{}", sh.text());
    let out = TempDir::new("export-console");
    let file = out.path().join("empty.sh");
    let console = Command::new(binary())
        .args(["export", &id, "-o"])
        .arg(&file)
        .env("AGENT_CONTROLLER_API", &d.api)
        .output()
        .unwrap();
    assert_eq!(console.status.code(), Some(0), "{console:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), sh.text(), "the file is the API's script");
    let ran = Command::new("bash").arg(&file).output().unwrap();
    assert!(ran.status.success() && String::from_utf8_lossy(&ran.stderr).contains("nothing to do"), "{ran:?}");
    let bad = Command::new(binary())
        .args(["export", &id, "--format", "gif"])
        .env("AGENT_CONTROLLER_API", &d.api)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(5), "an API error: {bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("format=gif"), "{bad:?}");
}

#[test]
fn a_shell_run_exports_its_commands_in_order_with_their_approvals() {
    let script = vec![
        tools(Some("First the header line."), &[("run_command", json!({"command": "printf 'one ' > out.txt"}))]),
        tool("read_file", json!({"path": "out.txt"})),
        tool("run_command", json!({"command": "printf 'two ' >> out.txt"})),
        tool("write_file", json!({"path": "notes.txt", "content": "it's done\n"})),
        tool("run_command", json!({"command": "cat notes.txt >> out.txt"})),
        tool("finish_task", json!({"summary": "written"})),
    ];
    let dir = TempDir::new("export-shell");
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let answer = |cmd: &Value| match cmd["action"].as_str() {
        Some("read_file") => json!({"success": true, "data": {"content": "one "}}),
        _ => json!({"success": true, "data": {"stdout": "", "stderr": "", "exit_code": 0}}),
    };
    let _w = ScriptedWorker::start(&d.worker_client(), "box", &["shell"], false, answer);
    let c = d.client();
    let body = json!({"mode": "task", "type": "shell", "target": "box", "instruction": "write out.txt",
        "options": {"approval": "human", "auto_confirm": true}});
    let id = create_session(&c, body);
    assert_eq!(ended(&c, &id)["status"], "finished");
    let r = c.get(&format!("/sessions/{id}/export?format=sh"));
    assert_eq!(r.status, 200, "{}", r.text());
    let sh = r.text();
    assert!(sh.starts_with("#!/usr/bin/env bash") && sh.contains("\nset -euo pipefail\n"), "{sh}");
    let at = |needle: &str| sh.find(needle).unwrap_or_else(|| panic!("{needle:?} in:\n{sh}"));
    assert!(at("printf 'one ' > out.txt") < at("printf 'two ' >> out.txt"), "{sh}");
    assert!(at("cat > 'notes.txt' <<'AGENT_CONTROLLER_EOF'\nit's done\n") < at("cat notes.txt >> out.txt"), "{sh}");
    assert_eq!(sh.matches("# approved by auto_confirm").count(), 4, "each approval noted: {sh}");
    assert!(sh.contains("# the model: First the header line."), "{sh}");
    assert!(!sh.contains("read_file") && !sh.contains("read file"), "a read is no step to run again: {sh}");
    let folder = TempDir::new("export-shell-run");
    std::fs::write(folder.path().join("run.sh"), &sh).unwrap();
    let ran = Command::new("bash").arg("run.sh").current_dir(folder.path()).output().unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(std::fs::read_to_string(folder.path().join("out.txt")).unwrap(), "one two it's done\n");
}

#[test]
fn the_skill_file_has_front_matter_and_names_only_real_commands() {
    let out = Command::new(binary()).arg("skill").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let front = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---\n")).map(|(f, _)| f).expect("front matter");
    let meta: serde_yaml::Value = serde_yaml::from_str(front).unwrap();
    assert_eq!(meta["name"].as_str(), Some("agent-controller"));
    assert!(meta["description"].as_str().is_some_and(|d| d.len() > 40 && d.len() <= 1024), "{meta:?}");
    let known: Vec<&str> = agent_controller::cli::args::COMMANDS.iter().map(|c| c.name).collect();
    // A command is named where a line or a `code span` starts with the program's name.
    let named: Vec<&str> = text
        .match_indices("agent-controller ")
        .filter(|(i, _)| *i == 0 || matches!(text.as_bytes()[i - 1], b'\n' | b'`'))
        .filter_map(|(i, m)| text[i + m.len()..].split(|c: char| !c.is_ascii_lowercase()).next())
        .filter(|w| !w.is_empty())
        .collect();
    for word in &named {
        assert!(known.contains(word), "SKILL.md names `agent-controller {word}`, which is no command");
    }
    // What a coding agent needs: every client command that drives a session.
    let major = [
        "task", "explore", "sessions", "status", "log", "report", "confirm", "answer", "files", "download", "stop",
        "pause", "act", "resume", "replay", "export", "health", "workers", "mcp",
    ];
    for command in major {
        assert!(named.contains(&command), "SKILL.md does not mention `agent-controller {command}`");
        assert!(known.contains(&command), "{command} left the command table: update the test and SKILL.md");
    }
    assert!(text.contains("--json"), "programs read --json");
}

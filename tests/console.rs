//! The console binary against the real daemon (scripted model, scripted worker): following a
//! task, confirmations with --yes / --no / a real terminal, every command, exit codes.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A daemon whose model asks one confirmation, has the worker download one file, saves a CSV,
/// notes something and finishes.
fn world(tag: &str) -> (TempDir, TestDaemon, ScriptedLlm, ScriptedWorker) {
    let dir = TempDir::new(tag);
    let script = vec![
        tool(
            "request_confirmation",
            json!({"action": "download", "description": "Download the report", "details": ["report.pdf"], "risk_level": "low"}),
        ),
        tool("browser_download", json!({"url": "https://x.test/report.pdf"})),
        tools(
            None,
            &[
                ("save_file", json!({"filename": "data.csv", "content": "a,b\n1,2\n"})),
                ("save_note", json!({"title": "Seen", "content": "one report"})),
            ],
        ),
        tool("finish_task", json!({"summary": "got the report", "report_markdown": "# Report\nAll fetched."})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let uploader = d.worker_client();
    let worker = ScriptedWorker::start(&d.worker_client(), "console-box", &["browser"], false, move |cmd| {
        if cmd["action"] == "browser_download" {
            json!({"success": true, "data": upload_as_worker(&uploader, cmd, "report.pdf", b"%PDF-1.4 report")})
        } else {
            json!({"success": true, "data": {}})
        }
    });
    (dir, d, llm, worker)
}

fn console(d: &TestDaemon, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("AGENT_CONTROLLER_API", &d.api)
        .env_remove("AGENT_CONTROLLER_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn task_follows_to_the_end_with_yes_and_downloads_the_files() {
    let (_dir, d, _llm, _w) = world("console-yes");
    let out = TempDir::new("console-out");
    let o = console(
        &d,
        &[
            "task",
            "--url",
            "https://x.test/",
            "get the report",
            "--yes",
            "--allow-domain",
            "x.test",
            "--allow-domain",
            "*.cdn.test",
            "--out",
            out.path().to_str().unwrap(),
        ],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let id = t.split("session ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap().trim_end_matches(':');
    let record = d.client().get(&format!("/sessions/{id}")).json();
    assert_eq!(record["options"]["allowed_domains"], serde_json::json!(["x.test", "*.cdn.test"]), "{record}");
    for needle in [
        "session sess_",
        "tool",
        "browser_download",
        "confirmation",
        "finished",
        "# Report",
        "All fetched.",
        "report.pdf",
        "data.csv",
    ] {
        assert!(t.contains(needle), "{needle:?} missing in:\n{t}");
    }
    assert!(!t.contains("\x1b["), "no colour without a terminal");
    assert_eq!(std::fs::read(out.path().join("report.pdf")).unwrap(), b"%PDF-1.4 report");
    assert_eq!(std::fs::read_to_string(out.path().join("data.csv")).unwrap(), "a,b\n1,2\n");
    assert!(t.lines().filter(|l| l.contains("↓")).count() == 2, "one progress line per file:\n{t}");
}

#[test]
fn no_terminal_needs_yes_or_no_and_no_means_exit_4() {
    let (_dir, d, _llm, _w) = world("console-notty");
    let o = console(&d, &["task", "--url", "https://x.test/", "get the report"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--yes or --no"), "{}", text(&o));
    // The session still waits; answer it with `confirm`, then follow its log to the end.
    let id = d.client().get("/sessions").json()[0]["session_id"].as_str().unwrap().to_string();
    let o = console(&d, &["confirm", &id, "--no"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("denied: Download the report"));
    let o = console(&d, &["log", &id, "-f"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).contains("Denied: Download the report"), "{}", text(&o));
}

#[test]
fn denying_with_no_exits_4() {
    let (_dir, d, _llm, _w) = world("console-no");
    let o = console(&d, &["task", "--url", "https://x.test/", "get the report", "--no", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    // --json: one JSON object per line.
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
}

#[test]
fn the_prompt_works_on_a_real_terminal() {
    let (_dir, d, _llm, _w) = world("console-pty");
    // Python's pty module gives the console a real terminal; it answers "y" at the prompt.
    let script = r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "task", "--url", "https://x.test/", "get the report"])
out = b""
answered = False
deadline = time.time() + 60
while time.time() < deadline:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if not answered and b"Approve? [y/n]" in out:
        os.write(fd, b"maybe\n")
        time.sleep(0.3)
        os.write(fd, b"y\n")
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(binary())
        .env("AGENT_CONTROLLER_API", &d.api)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("Confirmation needed (low risk):") && t.contains("- report.pdf"), "{t}");
    assert!(t.contains("please answer y or n"), "{t}");
    assert!(t.contains("\x1b["), "colour on a terminal");
    assert!(t.contains("finished"), "{t}");
}

#[test]
fn every_read_command_and_stop() {
    let (_dir, d, _llm, _w) = world("console-read");
    let o = console(&d, &["task", "--url", "https://x.test/", "get the report", "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let id = d.client().get("/sessions").json()[0]["session_id"].as_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let o = console(&d, args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(run(&["sessions"]).contains(&id));
    assert!(run(&["status", &id]).contains("summary: got the report"));
    assert_eq!(serde_json::from_str::<Value>(run(&["status", &id, "--json"]).trim()).unwrap()["status"], "finished");
    assert!(run(&["log", &id]).contains("browser_download"));
    assert!(run(&["report", &id]).contains("All fetched."));
    assert!(run(&["notes", &id]).contains("Seen: one report"));
    let files = run(&["files", &id]);
    assert!(files.contains("report.pdf") && files.contains("data.csv"), "{files}");
    assert!(run(&["workers"]).contains("console-box"));
    assert!(run(&["health"]).starts_with("ok: controller"));
    let out = TempDir::new("console-dl");
    run(&["download", &id, "--zip", "-o", out.path().to_str().unwrap()]);
    let zip = std::fs::read(out.path().join(format!("{id}.zip"))).unwrap();
    assert_eq!(zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap().len(), 2);
    run(&["download", &id, "data.csv", "-o", out.path().to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(out.path().join("data.csv")).unwrap(), "a,b\n1,2\n");
    // Errors: unknown session (API error, exit 5), usage (exit 2), finished session cannot stop.
    assert_eq!(console(&d, &["status", "sess_nope"]).status.code(), Some(5));
    assert_eq!(console(&d, &["stop", &id]).status.code(), Some(5));
    assert_eq!(console(&d, &["status"]).status.code(), Some(2));
    assert_eq!(console(&d, &["task", "no target"]).status.code(), Some(2));
    assert_eq!(console(&d, &["frobnicate"]).status.code(), Some(2));
    assert_eq!(console(&d, &["confirm", &id]).status.code(), Some(2));
}

#[test]
fn a_missing_daemon_is_one_clear_line() {
    // Nothing listens on port 1, and no test can bind it.
    let o =
        Command::new(binary()).args(["sessions"]).env("AGENT_CONTROLLER_API", "http://127.0.0.1:1").output().unwrap();
    assert_eq!(o.status.code(), Some(5));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("127.0.0.1:1") && err.contains("agent-controller serve"), "{err}");
    let _ = Duration::ZERO;
}

#[test]
fn task_hands_over_files_in_a_profile_and_profiles_lists_and_removes_it() {
    let (dir, d, _llm, _w) = world("console-files");
    let bytes: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let file = dir.path().join("invoice.bin");
    std::fs::write(&file, &bytes).unwrap();
    let args =
        ["task", "--url", "https://x.test/", "--file", file.to_str().unwrap(), "--profile", "shop", "up", "--yes"];
    let o = console(&d, &args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let id = t.split("session ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap();
    let c = d.client();
    let record = c.get(&format!("/sessions/{id}")).json();
    assert_eq!(
        (record["inputs"].clone(), record["options"]["browser_profile"].clone()),
        (json!(["invoice.bin"]), json!("shop"))
    );
    assert_eq!(c.get(&format!("/sessions/{id}/files/invoice.bin")).body, bytes);
    let listed = text(&console(&d, &["profiles"]));
    assert!(listed.contains("shop") && listed.contains("console-box"), "{listed}");
    let removed = console(&d, &["profiles", "rm", "shop"]);
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed));
    assert!(c.get("/profiles").json().as_array().unwrap().is_empty());
    let again = console(&d, &["profiles", "rm", "shop"]);
    assert_eq!(again.status.code(), Some(5), "{}", text(&again));
    let bad = console(&d, &["task", "--url", "https://x.test/", "--file", "/no/such/file", "x", "--yes"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

#[test]
fn task_options_in_either_spelling_reach_the_session() {
    let (dir, d, _llm, _w) = world("console-spellings");
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    std::fs::write(&a, "a").unwrap();
    std::fs::write(&b, "b").unwrap();
    let file_a = format!("--file={}", a.display());
    let args = [
        "task",
        "--url=https://x.test/",
        &file_a,
        "--file",
        b.to_str().unwrap(),
        "--max-turns=7",
        "--allow-domain",
        "x.test",
        "--dry-run",
        "get",
        "--yes",
        "it",
    ];
    let o = console(&d, &args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let id = t.split("session ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap();
    let record = d.client().get(&format!("/sessions/{id}")).json();
    assert_eq!(record["inputs"], json!(["a.txt", "b.txt"]), "{record}");
    assert_eq!(record["instruction"], "get it", "{record}");
    let options = &record["options"];
    assert_eq!((options["max_turns"].clone(), options["dry_run"].clone()), (json!(7), json!(true)), "{record}");
    assert_eq!(options["allowed_domains"], json!(["x.test"]), "{record}");
}

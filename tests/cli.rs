//! The command line as a person meets it, through the built binary: help everywhere, version
//! with the commit, global options on either side of the command, mistakes named with exit 2,
//! a closed pipe ending quietly, aligned tables (and `--json` for scripts), `config check`,
//! and shell completions that complete.

use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.args(args).env_remove("AGENT_CONTROLLER_API").env_remove("AGENT_CONTROLLER_TOKEN").stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_and_version_work_everywhere() {
    let o = run(&["help"], &[]);
    assert_eq!(o.status.code(), Some(0));
    for c in ["serve", "task", "sessions", "download", "config", "completions", "version"] {
        assert!(stdout(&o).contains(&format!("\n    {c} ")), "help lists {c}: {}", stdout(&o));
    }
    assert_eq!(stdout(&run(&["--help"], &[])), stdout(&o));
    let task_help = stdout(&run(&["help", "task"], &[]));
    assert!(task_help.contains("--url URL") && task_help.contains("--dry-run"), "{task_help}");
    for args in [&["task", "--help"][..], &["task", "-h"], &["--help", "task"], &["task", "--url", "x", "-h"]] {
        let o = run(args, &[]);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(stdout(&o), task_help, "{args:?}");
    }
    for c in ["sessions", "download", "serve", "config", "log"] {
        let o = run(&[c, "--help"], &[]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).starts_with(&format!("agent-controller {c} — ")), "{}", stdout(&o));
    }
    let version = stdout(&run(&["version"], &[]));
    assert!(version.starts_with(&format!("agent-controller {} (commit ", env!("CARGO_PKG_VERSION"))), "{version}");
    let commit = version.split("commit ").nth(1).unwrap().trim_end_matches(")\n");
    assert!(commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit()), "a git commit: {version}");
    for args in [&["--version"][..], &["-V"], &["status", "--version"]] {
        assert_eq!(stdout(&run(args, &[])), version, "{args:?}");
    }
    let o = run(&["help", "frobnicate"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn mistakes_are_named_and_exit_2() {
    for (args, named) in [
        (&["task", "--url", "https://x", "--frobnicate", "go"][..], "unknown option --frobnicate"),
        (&["sessions", "--verbose"], "unknown option --verbose"),
        (&["task", "go", "--url"], "--url needs a value"),
        (&["log", "S1", "-f=1"], "unknown option -f=1"),
        (&["--api"], "--api goes with a console command"),
        (&["--json", "--config", "x"], "--json goes with a console command"),
        (&["status"], "needs ID"),
        (&["status", "a", "b"], "unexpected argument \"b\""),
        (&["frobnicate"], "unknown command \"frobnicate\""),
        (&["serve", "--json"], "unknown option --json"),
        // An option another command takes is still unknown to this one, and named.
        (&["explore", "--url", "https://x", "--file", "f"], "unknown option --file for `explore`"),
        (&["status", "S1", "--zip"], "unknown option --zip for `status`"),
        (&["confirm", "S1", "--yes", "--note=n"], "unknown option --note for `confirm`"),
        (&["serve", "--api-port", "http"], "option --api-port takes N, not \"http\""),
        (&["task", "--title", "--url", "https://x", "go"], "--title needs a value"),
        (&["completions", "powershell"], "powershell"),
        (&["config", "show"], "config check"),
    ] {
        let o = run(args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(named), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn a_value_that_is_not_a_number_is_named() {
    let o = run(&["task", "--url", "https://x", "--max-turns", "many", "go"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("option --max-turns takes N, not \"many\""), "{}", stderr(&o));
}

#[test]
fn global_options_before_or_after_and_tables_that_line_up() {
    let dir = TempDir::new("cli-tables");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("cli-token");
    let d = TestDaemon::idle(config);
    let c = d.client();
    create_session(&c, json!({"mode": "explore", "target": "https://a-rather-long-target.example.test/x"}));
    create_session(&c, json!({"mode": "task", "target": "Calculator", "instruction": "add"}));
    let before = run(&["--api", &d.api, "--token", "cli-token", "--json", "sessions"], &[]);
    let after = run(&["sessions", "--json", "--api", &d.api, "--token=cli-token"], &[]);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    let list: Value = serde_json::from_slice(&before.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let list_after: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(list_after.as_array().unwrap().len(), 2);

    let table =
        stdout(&run(&["sessions"], &[("AGENT_CONTROLLER_API", &d.api), ("AGENT_CONTROLLER_TOKEN", "cli-token")]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].starts_with("ID") && lines[0].contains("STATUS") && lines[0].ends_with("TARGET"), "{table}");
    for column in ["STATUS", "MODE", "TYPE", "TARGET"] {
        let at = lines[0].find(column).unwrap();
        for line in &lines[1..] {
            let cell = &line[at..];
            assert!(line[..at].ends_with("  ") && !cell.starts_with(' '), "{column} lines up:\n{table}");
        }
    }
    assert!(table.contains("waiting") && table.contains("https://a-rather-long-target.example.test/x"));
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let dir = TempDir::new("cli-pipe");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _ = register(&d.worker_client(), json!({"hostname": "p", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "i"}));
    let (runner, _done) = test_agent.next();
    for i in 0..3000 {
        runner.log(agent_controller::protocol::LogKind::System, &format!("line {i} {}", "x".repeat(100)), None);
    }
    // `agent-controller log ID | head -1`: the reader takes one line and goes away.
    let mut child = Command::new(binary())
        .args(["log", &id])
        .env("AGENT_CONTROLLER_API", &d.api)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("created") || first.contains("line") || first.contains("waiting"), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "nothing on stderr, no panic: {err}");
    use std::os::unix::process::ExitStatusExt;
    assert!(out.status.success() || out.status.signal() == Some(libc::SIGPIPE), "{:?}", out.status);
}

#[test]
fn config_check_validates_and_masks_secrets() {
    let dir = TempDir::new("cli-config");
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "server:\n  api_port: 7000\nproviders:\n  local: {provider: openai, api_key: file-secret-1}\n",
    )
    .unwrap();
    let o = run(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[("AGENT_CONTROLLER_TOKEN", "env-secret-2"), ("ANTHROPIC_API_KEY", "env-secret-3")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("api_port: 7000") && shown.contains("worker_port: 5901"), "{shown}");
    assert!(shown.contains("api_token: \"********\"") && shown.contains("worker_token: \"\""), "{shown}");
    assert!(!shown.contains("secret-"), "no secret is printed: {shown}");
    assert!(shown.contains("local: openai gpt-4.1-mini"), "{shown}");
    std::fs::write(&file, "task:\n  max_turns: 0\n").unwrap();
    let o = run(&["config", "check", "--config", file.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("task.max_turns"), "{}", stderr(&o));
    let o = run(&["config", "check", "--config", "/nonexistent/c.yaml"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bash_completion_completes_commands_and_options() {
    let script = stdout(&run(&["completions", "bash"], &[]));
    let complete = |words: &str| -> String {
        let probe = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _agent_controller; echo \"${{COMPREPLY[*]}}\""
        );
        let o = Command::new("bash").args(["--norc", "-c", &probe]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(complete("agent-controller ta"), "task");
    assert_eq!(complete("agent-controller --api http://x ses"), "sessions");
    assert_eq!(complete("agent-controller task --u"), "--url --username");
    assert_eq!(complete("agent-controller completions z"), "zsh");
    assert_eq!(complete("agent-controller help dow"), "download");
    for shell in ["zsh", "fish"] {
        let s = stdout(&run(&["completions", shell], &[]));
        assert!(s.contains("agent-controller") && s.contains("--max-turns") || s.contains("-l max-turns"), "{shell}");
        if Command::new(shell).arg("--version").output().is_ok() {
            let o = Command::new(shell).args(["-n", "-c", &s]).output().unwrap();
            assert!(o.status.success(), "{shell}: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
}

#[test]
fn downloads_show_progress_on_a_terminal_and_nothing_when_piped() {
    let dir = TempDir::new("cli-progress");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _ = register(&d.worker_client(), json!({"hostname": "g", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "i"}));
    let (runner, _done) = test_agent.next();
    let big = vec![7u8; 3 << 20];
    runner.store_file("big.bin", &big, agent_controller::protocol::FileKind::Download).unwrap();
    let out = TempDir::new("cli-progress-out");
    let piped =
        run(&["download", &id, "big.bin", "-o", out.path().to_str().unwrap()], &[("AGENT_CONTROLLER_API", &d.api)]);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert!(stderr(&piped).is_empty(), "no progress when piped: {:?}", stderr(&piped));
    assert!(stdout(&piped).contains("big.bin (3072 KB)") && !stdout(&piped).contains('\r'), "{}", stdout(&piped));
    // On a terminal (Python's pty): a bar with the total, erased at the end.
    let script = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(binary())
        .args(["download", &id, "big.bin", "-o", out.path().to_str().unwrap()])
        .env("AGENT_CONTROLLER_API", &d.api)
        .output()
        .unwrap();
    let shown = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{shown}");
    assert!(shown.contains("↓ big.bin [") && shown.contains("/3.0 MB") && shown.contains("\r\x1b[K"), "{shown:?}");
    assert_eq!(std::fs::read(out.path().join("2-big.bin")).unwrap(), big);
}

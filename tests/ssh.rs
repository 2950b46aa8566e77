//! Shell sessions over SSH with no worker, against a real `sshd` the test starts: the command
//! semantics (awkward bytes written and read back, pagers, timeouts, ANSI), the host briefing,
//! a changed host key refused, and approval modes (a person approving, denying with a reason
//! and editing; a validator) and `ask_user`, through the real daemon and a scripted model.

use crate::support::llm::*;
use crate::support::sshd::{Sshd, shared_dir};
use crate::support::wire::Wire;
use crate::support::*;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(60), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

fn ssh_daemon(dir: &TempDir, sshd: &Sshd, script: Vec<Step>) -> (TestDaemon, ScriptedLlm) {
    let key = sshd.key.clone();
    llm_daemon(dir.path(), script, move |c| {
        c.ssh.identity_file = key;
        c.task.confirmation_timeout = 30;
    })
}

/// The text of the tool results in the last user message of a recorded request.
fn result_text(r: &Recorded) -> String {
    r.last_results().iter().map(|b| b["content"].to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_shell_task_over_ssh() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = TempDir::new("ssh-task");
    let work = shared_dir(dir.path(), "work");
    let awkward: Vec<u8> = b"it's \"$HOME\" `date` \\ \xff\xfe end\n".to_vec();
    let path = work.join("awkward.bin");
    let script = vec![
        tool("list_dir", json!({"path": work.display().to_string()})),
        tool(
            "write_file",
            json!({"path": path.display().to_string(), "content": STANDARD.encode(&awkward), "encoding": "base64"}),
        ),
        tool("read_file", json!({"path": path.display().to_string()})),
        tool("run_command", json!({"command": "echo paged | $PAGER; printf '\\033[1;31mred\\033[0m\\n'"})),
        tool("run_command", json!({"command": "sleep 30", "timeout_s": 2})),
        tool("read_file", json!({"path": work.join("sales.csv").display().to_string()})),
        tool("read_file", json!({"path": work.join("guessed/notes.txt").display().to_string()})),
        tool("read_file", json!({"path": work.join("guessed/twice.txt").display().to_string()})),
        tool("finish_task", json!({"summary": "done over ssh"})),
    ];
    std::fs::write(work.join("sales.csv"), "day,amount\n1,20\n2,22\n").unwrap();
    std::fs::create_dir_all(work.join("deep")).unwrap();
    std::fs::write(work.join("deep/notes.txt"), "found it\n").unwrap();
    for twice in ["deep/twice.txt", "twice.txt"] {
        std::fs::write(work.join(twice), "one of two\n").unwrap();
    }
    let (d, llm) = ssh_daemon(&dir, &sshd, script);
    let c = d.client();
    let started = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": sshd.target(), "instruction": "look around", "options": {"approval": "auto", "profile": "small"}}),
    );
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(s["type"], "shell");
    assert_eq!(s["worker"], format!("ssh {}@127.0.0.1:{}", sshd.user, sshd.port));
    assert_eq!(std::fs::read(&path).unwrap(), awkward, "written byte for byte");
    let reqs = llm.requests();
    let opening = reqs[0].body["messages"][0].to_string();
    assert!(opening.contains("The host runs Linux") && opening.contains("sudo"), "{opening}");
    assert!(result_text(&reqs[1]).contains("total"), "{}", result_text(&reqs[1]));
    assert!(result_text(&reqs[3]).contains("it's"), "{}", result_text(&reqs[3]));
    let shown = result_text(&reqs[4]);
    assert!(shown.contains("paged") && shown.contains("red") && !shown.contains("\\u001b"), "{shown}");
    let slow = result_text(&reqs[5]);
    assert!(slow.contains("timed_out") && slow.contains("killed after 2 s"), "{slow}");
    // A CSV read over SSH names its columns and the awk that sums one (`reading_hints`, the
    // controller's, so the same as through a worker).
    let csv = result_text(&reqs[6]);
    assert!(csv.contains("$1 day, $2 amount") && csv.contains("awk -F,"), "{csv}");
    // A guessed folder: the only file of that name below the nearest one that exists is read
    // (`same_name_read`, asked by the controller, as through a worker).
    let moved = result_text(&reqs[7]);
    assert!(moved.contains("found it") && moved.contains("the only file of that name below"), "{moved}");
    let several = result_text(&reqs[8]);
    assert!(several.contains("a file of that name is at: ") && !several.contains("one of two"), "{several}");
    assert!(started.elapsed() < Duration::from_secs(25), "{:?}", started.elapsed());
    assert!(
        std::fs::read_to_string(dir.path().join("known_hosts"))
            .unwrap()
            .contains(&format!("[127.0.0.1]:{}", sshd.port))
    );
}

#[test]
fn a_changed_host_key_is_refused() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = TempDir::new("ssh-hostkey");
    // The key this controller remembers for that host:port is another one.
    let other = TempDir::new("other-key");
    let status = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(other.path().join("k"))
        .status()
        .unwrap();
    assert!(status.success());
    let pubkey = std::fs::read_to_string(other.path().join("k.pub")).unwrap();
    let mut parts = pubkey.split_whitespace();
    let line = format!("[127.0.0.1]:{} {} {}\n", sshd.port, parts.next().unwrap(), parts.next().unwrap());
    std::fs::write(dir.path().join("known_hosts"), line).unwrap();
    let (d, llm) = ssh_daemon(&dir, &sshd, vec![]);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "explore", "target": sshd.target(), "goal": "x"}));
    let s = ended(&c, &id);
    assert_eq!(s["status"], "error");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("host key differs") && error.contains("refused"), "{error}");
    assert!(llm.requests().is_empty(), "the model was never asked");
}

/// Wait for the pending confirmation and answer it with `answer` (its id added).
fn answer_pending(c: &Client, id: &str, mut answer: Value) -> Value {
    let pending = wait_until(Duration::from_secs(20), "a pending confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    });
    answer["confirmation_id"] = pending["confirmation_id"].clone();
    let r = c.post(&format!("/sessions/{id}/confirmation"), &answer);
    assert_eq!(r.status, 200, "{}", r.text());
    pending
}

#[test]
fn a_person_approves_denies_with_a_reason_and_edits() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = TempDir::new("ssh-human");
    let marker = shared_dir(dir.path(), "out").join("edited-ran");
    let script = vec![
        tool("run_command", json!({"command": "rm -rf /important"})),
        tool("run_command", json!({"command": "echo original"})),
        tool("finish_task", json!({"summary": "asked twice"})),
    ];
    let (d, llm) = ssh_daemon(&dir, &sshd, script);
    let c = d.client();
    // A shell task over SSH asks a person by default.
    let id = create_session(&c, json!({"mode": "task", "target": sshd.target(), "instruction": "clean up"}));
    let first = answer_pending(&c, &id, json!({"approved": false, "reason": "not on this host"}));
    assert_eq!(first["details"]["command"], "rm -rf /important");
    let edited = format!("touch {}", marker.display());
    let r = c.post(
        &format!("/sessions/{id}/confirmation"),
        &json!({"confirmation_id": "conf_999", "approved": true, "edited_command": "x"}),
    );
    assert_error(&r, 409, "conflict");
    answer_pending(&c, &id, json!({"approved": true, "edited_command": edited}));
    assert_eq!(ended(&c, &id)["status"], "finished");
    let reqs = llm.requests();
    let denied = result_text(&reqs[1]);
    assert!(denied.contains("denied") && denied.contains("not on this host"), "{denied}");
    let ran = result_text(&reqs[2]);
    assert!(ran.contains("edited command instead") && !ran.contains("original"), "{ran}");
    assert!(marker.exists(), "the edited command ran, not the model's");
}

#[test]
fn a_validator_approves_and_rejects() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = TempDir::new("ssh-validator");
    let script = vec![
        tool("run_command", json!({"command": "uname -a"})),
        text("APPROVE"),
        tool("run_command", json!({"command": "rm -rf ~"})),
        text("REJECT REASON: it deletes the home folder"),
        tool("finish_task", json!({"summary": "checked"})),
    ];
    let (d, llm) = ssh_daemon(&dir, &sshd, script);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": sshd.target(), "instruction": "look", "options": {"approval": "validator"}}),
    );
    assert_eq!(ended(&c, &id)["status"], "finished");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[1].body.get("tools").is_none() && reqs[1].body.to_string().contains("uname -a"), "the validator call");
    assert!(result_text(&reqs[2]).contains("Linux"), "{}", result_text(&reqs[2]));
    assert!(result_text(&reqs[4]).contains("rejected it: it deletes the home folder"), "{}", result_text(&reqs[4]));
}

#[test]
fn ask_user_is_answered_or_times_out() {
    let dir = TempDir::new("ask-user");
    let script = vec![
        tool("ask_user", json!({"question": "Which year?"})),
        tool("ask_user", json!({"question": "Anything else?"})),
        tool("finish_task", json!({"summary": "asked"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.task.confirmation_timeout = 2);
    let _worker = ScriptedWorker::start(&d.worker_client(), "box", &["browser"], false, |_| json!({"success": true}));
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "report"}));
    let q = wait_until(Duration::from_secs(10), "the question", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        s["question_pending"].is_object().then_some(s)
    });
    assert_eq!(q["status"], "confirming");
    assert_eq!(q["question_pending"]["question"], "Which year?");
    assert_error(
        &c.post(&format!("/sessions/{id}/answer"), &json!({"question_id": "q_999", "text": "x"})),
        409,
        "conflict",
    );
    assert_eq!(c.post(&format!("/sessions/{id}/answer"), &json!({"text": "2024"})).status, 200);
    assert_eq!(ended(&c, &id)["status"], "finished");
    let reqs = llm.requests();
    assert!(result_text(&reqs[1]).contains("2024"));
    assert!(result_text(&reqs[2]).contains("nobody answered"), "{}", result_text(&reqs[2]));
    assert_error(&c.post(&format!("/sessions/{id}/answer"), &json!({"text": "late"})), 409, "conflict");
}

/// A shell session that reads reports (`report N` answers `FACT-N-…` and `filler` lines) with
/// the scripted model, which answers each request without tools (a summary) with `summary`:
/// the daemon, the model, the worker and the session, which has finished.
fn report_session(
    dir: &TempDir,
    script: Vec<Step>,
    summary: &str,
    filler: usize,
    tune: impl FnOnce(&mut agent_controller::config::Config),
) -> (TestDaemon, ScriptedLlm, ScriptedWorker, String) {
    let llm = ScriptedLlm::start_full(Wire::Anthropic, "", script, Some(text(summary)));
    let mut config = test_config(dir.path());
    config.api.base_url = llm.url.clone();
    config.api.api_key = agent_controller::util::secret::Secret::new("sk-test");
    tune(&mut config);
    let d = TestDaemon::start(config.clone(), agent_controller::agent::llm_agent(&config));
    let worker = ScriptedWorker::start(&d.worker_client(), "box", &["shell"], false, move |cmd| {
        let n = cmd["params"]["command"].as_str().unwrap().trim_start_matches("report ").to_string();
        let body = format!("FACT-{n}-{}\n{}", "x".repeat(10), "filler line of the report\n".repeat(filler));
        json!({"success": true, "data": {"exit_code": 0, "stdout": body, "stderr": ""}})
    });
    let c = d.client();
    let id =
        create_session(&c, json!({"mode": "task", "type": "shell", "target": "box", "instruction": "read reports"}));
    assert_eq!(ended(&c, &id)["status"], "finished");
    llm.assert_well_formed();
    (d, llm, worker, id)
}

#[test]
fn compaction_keeps_recent_steps_and_the_record_and_history_finds_what_was_compacted() {
    let dir = TempDir::new("compaction");
    let mut script: Vec<Step> =
        (1..=6).map(|n| tool("run_command", json!({"command": format!("report {n}")}))).collect();
    script.push(tool("search_history", json!({"query": "FACT-1-"})));
    script.push(tool("finish_task", json!({"summary": "read six reports"})));
    let (d, llm, _worker, id) = report_session(&dir, script, "Ran reports 1 and up; all fine.", 80, |config| {
        config.agent.compact_at_tokens = 1500;
        config.agent.keep_recent_steps = 2;
    });
    let c = d.client();
    let reqs = llm.requests();
    let with_tools: Vec<&Recorded> = reqs.iter().filter(|r| r.body.get("tools").is_some()).collect();
    let summaries = reqs.len() - with_tools.len();
    assert!(summaries >= 1, "at least one compaction");
    let last = with_tools.last().unwrap();
    let msgs = last.body["messages"].as_array().unwrap();
    assert!(msgs[0].to_string().contains("Summary of the earlier steps"), "{}", msgs[0]);
    let assistants = msgs.iter().filter(|m| m["role"] == "assistant").count();
    assert!(assistants <= 3, "only the recent steps stay verbatim: {assistants}");
    // search_history found a fact from a step long compacted away.
    let found = result_text(with_tools[with_tools.len() - 1]);
    assert!(found.contains("FACT-1-xxxxxxxxxx"), "{found}");
    // The record on disk has every call.
    let conv: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(&id).join("conversation_log.json")).unwrap())
            .unwrap();
    let calls = conv["messages"].to_string().matches("\"tool_use\"").count();
    assert_eq!(calls, 8);
    assert!(conv["compacted"]["summary"].as_str().unwrap().contains("all fine"));
    let log = c.get(&format!("/sessions/{id}/log")).json().to_string();
    assert!(log.contains("context compacted"), "{log}");
}

/// A request the server refuses as longer than the model's context is compacted down to the
/// last step and sent once more: the session goes on instead of ending with the API's error.
#[test]
fn a_request_too_long_for_the_context_is_compacted_and_sent_again() {
    let dir = TempDir::new("overflow");
    let mut script: Vec<Step> =
        (1..=3).map(|n| tool("run_command", json!({"command": format!("report {n}")}))).collect();
    script.push(Step::error(400, "invalid_request_error", "prompt is too long: 9379 tokens > 8192 maximum"));
    script.push(tool("finish_task", json!({"summary": "read three reports"})));
    let (d, llm, _worker, id) = report_session(&dir, script, "Ran reports 1 to 3; all fine.", 0, |_| {});
    let c = d.client();
    let reqs = llm.requests();
    let with_tools: Vec<&Recorded> = reqs.iter().filter(|r| r.body.get("tools").is_some()).collect();
    assert_eq!(reqs.len() - with_tools.len(), 1, "one summary");
    let (refused, again) = (with_tools[with_tools.len() - 2], with_tools[with_tools.len() - 1]);
    let msgs = again.body["messages"].as_array().unwrap();
    assert!(msgs[0].to_string().contains("Summary of the earlier steps"), "{}", msgs[0]);
    assert_eq!(msgs.iter().filter(|m| m["role"] == "assistant").count(), 1, "only the last step stays");
    assert!(msgs.len() < refused.body["messages"].as_array().unwrap().len());
    let log = c.get(&format!("/sessions/{id}/log")).json().to_string();
    assert!(log.contains("too long for the model's context") && log.contains("context compacted"), "{log}");
}

/// The `ssh` processes of the master connection to this test's server (our executor's child).
fn kill_master(port: u16) {
    let pattern = format!("-p {port} .*-T -M -N");
    let killed = std::process::Command::new("pkill").args(["-KILL", "-f", "--", &pattern]).status().unwrap();
    let ps = std::process::Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    let ssh: Vec<String> =
        String::from_utf8_lossy(&ps.stdout).lines().filter(|l| l.contains("ssh")).map(str::to_string).collect();
    assert!(killed.success(), "no master connection to kill ({pattern}): {ssh:#?}");
}

fn log_has(c: &Client, id: &str, text: &str) -> bool {
    c.get(&format!("/sessions/{id}/log")).json().to_string().contains(text)
}

#[test]
fn a_dropped_connection_is_rebuilt_and_then_reported() {
    let Some(mut sshd) = Sshd::start() else { return };
    let dir = TempDir::new("ssh-drop");
    let pause = Duration::from_millis(1500);
    let script = vec![
        tool("run_command", json!({"command": "echo one"})),
        tool("run_command", json!({"command": "echo two"})).delayed(pause),
        tool("run_command", json!({"command": "echo three"})).delayed(pause),
        tool("finish_task", json!({"summary": "survived"})),
    ];
    let (d, llm) = ssh_daemon(&dir, &sshd, script);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": sshd.target(), "instruction": "x", "options": {"approval": "auto"}}),
    );
    wait_until(Duration::from_secs(20), "the first command", || log_has(&c, &id, "one\\\\n").then_some(()));
    kill_master(sshd.port);
    wait_until(Duration::from_secs(20), "the second command", || log_has(&c, &id, "two\\\\n").then_some(()));
    // Now the host goes away for good (its end of the master connection goes with it).
    sshd.stop();
    assert_eq!(ended(&c, &id)["status"], "finished");
    let reqs = llm.requests();
    assert!(result_text(&reqs[2]).contains("two"), "rebuilt: {}", result_text(&reqs[2]));
    let lost = result_text(&reqs[3]);
    assert!(lost.contains("failed 3 times"), "{lost}");
}

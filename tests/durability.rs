//! Durability through the real daemon: one daemon per output directory, a panic logged and its
//! sessions resumed after the restart, storage management, worker liveness during long commands.

use crate::support::*;
use serde_json::json;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_second_daemon_on_the_same_directory_exits_naming_the_holder() {
    let dir = TempDir::new("dirlock");
    let out = dir.path().join("out");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(&out), agent);
    let c = d.client();
    let _w = register(&d.worker_client(), json!({"hostname": "l", "capabilities": ["browser"]}));
    let id = create_session(&c, json!({"mode": "explore", "target": "https://x.test"}));
    let (_runner, _done) = test_agent.next();
    wait_status(&c, &id, "running");
    let record = std::fs::read(out.join(&id).join("session.json")).unwrap();
    let log = std::fs::read(out.join(&id).join("log.jsonl")).unwrap();

    std::fs::write(
        dir.path().join("second.yaml"),
        format!("server:\n  api_port: 0\n  worker_port: 0\noutput:\n  dir: \"{}\"\n", out.display()),
    )
    .unwrap();
    let started = Instant::now();
    let o = Command::new(binary())
        .args(["--config", "second.yaml"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "exits at once");
    assert!(stderr.contains(&format!("pid {}", std::process::id())), "names the holder: {stderr}");
    // Nothing of the first daemon was touched: the session still runs, its files are as they were.
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "running");
    assert_eq!(std::fs::read(out.join(&id).join("session.json")).unwrap(), record);
    assert_eq!(std::fs::read(out.join(&id).join("log.jsonl")).unwrap(), log);
    drop(d);
    // Released with the daemon: a new one starts on the same directory.
    let d = TestDaemon::idle(test_config(&out));
    assert_eq!(d.client().get(&format!("/sessions/{id}")).json()["status"], "error");
}

/// A panic is a bug and ends the process (`util::panic`): it is logged, the process aborts
/// (SIGABRT, so `Restart=on-failure` starts it again), and after the restart the session that
/// was running is ended `interrupted` and goes on from its journal.
#[test]
fn a_panic_ends_the_process_logged_and_the_restart_resumes_its_sessions() {
    use std::os::unix::process::ExitStatusExt;
    let dir = TempDir::new("panic");
    let llm = crate::support::llm::ScriptedLlm::start(vec![
        crate::support::llm::text("slow").delayed(Duration::from_secs(30)),
    ]);
    let config = format!("api:\n  base_url: \"{}\"\nlogging:\n  file: daemon.log\n", llm.url);
    std::fs::write(dir.path().join("config.yaml"), config).unwrap();
    let serve = || {
        start_serving(
            Command::new(binary())
                .args(["serve", "--api-port", "0", "--worker-port", "0"])
                .env("ANTHROPIC_API_KEY", "sk-test")
                .current_dir(dir.path()),
        )
    };
    let Serving { mut child, stderr, api, worker, .. } = serve();
    let c = Client::new(api.clone(), None);
    let _w = register(&Client::new(worker, None), json!({"hostname": "h", "capabilities": ["shell"]}));
    let id = create_session(&c, json!({"mode": "explore", "type": "shell", "target": "h"}));
    wait_status(&c, &id, "running");

    // The route panics: no answer, the connection just closes, and the process is gone.
    let addr = api.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    conn.write_all(format!("GET /__test/panic HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    assert!(answer.is_empty(), "a panicking route answered: {}", String::from_utf8_lossy(&answer));
    let status = wait_until(Duration::from_secs(10), "the process to end", || child.0.try_wait().unwrap());
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    let printed = std::io::read_to_string(stderr).unwrap();
    let logged = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap();
    for text in [&printed, &logged] {
        assert!(text.contains("a bug ends the process") && text.contains("test trigger: a route panicked"), "{text}");
    }

    let Serving { child: _child, api, stderr: _stderr, .. } = serve();
    let c = Client::new(api, None);
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!((&s["status"], &s["end"]), (&json!("error"), &json!({"kind": "interrupted", "by": "restart"})), "{s}");
    let r = c.post(&format!("/sessions/{id}/resume"), &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
}

#[test]
fn sessions_can_be_purged_and_are_pruned_oldest_first_never_running() {
    use agent_controller::protocol::FileKind;
    use agent_controller::session::AgentOutcome;
    let dir = TempDir::new("purge");
    let mut config = test_config(dir.path());
    config.output.max_total_mb = 2;
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let c = d.client();
    let _w = register(&d.worker_client(), json!({"hostname": "p", "capabilities": ["browser"]}));
    let mut ids = Vec::new();
    for (i, size) in [700_000usize, 900_000, 900_000, 2_300_000].into_iter().enumerate() {
        let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
        let (runner, done) = test_agent.next();
        runner.store_file("blob.bin", &vec![i as u8; size], FileKind::Generated).unwrap();
        if i < 3 {
            done.send(AgentOutcome::Finished { summary: "ok".into() }).unwrap();
            wait_status(&c, &id, "finished");
        } else {
            std::mem::forget(done); // keeps running
        }
        ids.push(id);
    }
    // A running session cannot be purged; an ended one can, folder and all.
    assert_eq!(c.delete(&format!("/sessions/{}?purge=true", ids[3])).status, 409);
    wait_until(Duration::from_secs(5), "the thread to return", || {
        (c.delete(&format!("/sessions/{}?purge=true", ids[0])).status == 200).then_some(())
    });
    assert_eq!(c.get(&format!("/sessions/{}", ids[0])).status, 404);
    assert!(!dir.path().join(&ids[0]).exists());
    assert_eq!(c.delete(&format!("/sessions/{}?purge=true", ids[0])).status, 404);
    // Over max_total_mb (2 MiB): the oldest ended sessions go, the running one stays even
    // though the total is still over the cap without it.
    let pruned = d.daemon.as_ref().unwrap().sessions().prune();
    assert_eq!(pruned, 2);
    assert!(!dir.path().join(&ids[1]).exists() && !dir.path().join(&ids[2]).exists());
    assert_eq!(c.get(&format!("/sessions/{}", ids[3])).json()["status"], "running");
    assert_eq!(c.delete(&format!("/sessions/{}", ids[3])).status, 200);
    drop(d);

    // retain_days at start: a session that ended long ago goes, a recent one stays.
    let mut config = test_config(dir.path());
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config.clone(), agent);
    let c = d.client();
    let _w = register(&d.worker_client(), json!({"hostname": "p", "capabilities": ["browser"]}));
    let recent = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (_runner, done) = test_agent.next();
    done.send(AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &recent, "finished");
    drop(d);
    let old = std::fs::File::options().write(true).open(dir.path().join(&ids[3]).join("session.json")).unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(3 * 86_400)).unwrap();
    config.output.retain_days = 2;
    let d = TestDaemon::idle(config);
    let c = d.client();
    assert_eq!(c.get(&format!("/sessions/{}", ids[3])).status, 404);
    assert!(!dir.path().join(&ids[3]).exists());
    assert_eq!(c.get(&format!("/sessions/{recent}")).json()["status"], "finished");
}

/// The daemon binary with its output directory on a 1 MiB tmpfs of its own (a private mount
/// namespace), so the disk really fills. Skipped where unprivileged namespaces are not allowed.
#[test]
fn a_full_disk_ends_the_session_naming_the_cause_and_refuses_new_ones_507() {
    use crate::support::llm::{ScriptedLlm, text, tool};
    if !Command::new("unshare").args(["-rm", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: no unshare -rm here");
        return;
    }
    let dir = TempDir::new("diskfull");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let big = "x".repeat(1_200_000);
    let llm = ScriptedLlm::start(vec![tool("save_note", json!({"title": "big", "content": big})), text("done")]);
    std::fs::write(
        dir.path().join("config.yaml"),
        format!(
            "server:\n  api_port: 0\n  worker_port: 0\napi:\n  base_url: \"{}\"\noutput:\n  dir: \"{}\"\n",
            llm.url,
            out.display()
        ),
    )
    .unwrap();
    let script = r#"mount -t tmpfs -o size=1m none "$1" && exec "$2" --config config.yaml"#;
    let Serving { child, stderr: _stderr, api, worker, .. } = start_serving(
        Command::new("unshare")
            .args(["-rm", "sh", "-c", script, "sh"])
            .arg(&out)
            .arg(binary())
            .current_dir(dir.path())
            .env("ANTHROPIC_API_KEY", "sk-test"),
    );
    let c = Client { base: api, token: None, secret: None };
    let w = Client { base: worker, token: None, secret: None };
    // A shell target: this worker never polls, and a browser session would open its page on it first.
    register(&w, json!({"hostname": "f", "capabilities": ["shell"]}));
    let id = create_session(&c, json!({"mode": "explore", "type": "shell", "target": "f"}));
    let s = wait_status(&c, &id, "error");
    let error = s["error"].as_str().unwrap();
    assert!(error.starts_with("the controller's disk is full: cannot write"), "{error}");
    // Nothing partial: no temp files, every log line whole.
    let seen = std::path::PathBuf::from(format!("/proc/{}/root{}", child.0.id(), out.join(&id).display()));
    // The status shows before its last write is done (a temp file lives during a write): wait
    // for the writes to end, then nothing partial may be left.
    let names = || -> Vec<String> {
        std::fs::read_dir(&seen).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    };
    let partial = |n: &String| n.ends_with(".tmp") || n.ends_with(".part");
    let settled = wait_until(Duration::from_secs(10), "the last write to end", || {
        let now = names();
        (!now.iter().any(partial)).then_some(now)
    });
    assert!(settled.contains(&"session.json".to_string()), "{settled:?}");
    let log = std::fs::read_to_string(seen.join("log.jsonl")).unwrap();
    assert!(log.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()), "{log}");
    assert!(log.ends_with('\n'));
    // Fill what is left; a new session is refused 507 and leaves no folder.
    let root = std::path::PathBuf::from(format!("/proc/{}/root{}", child.0.id(), out.display()));
    let mut filler = std::fs::File::create(root.join("filler")).unwrap();
    while std::io::Write::write_all(&mut filler, &[0u8; 4096]).is_ok() {}
    let before = std::fs::read_dir(&root).unwrap().count();
    let r = c.post("/sessions", &json!({"mode": "explore", "target": "https://x.test"}));
    assert_eq!(r.status, 507, "{}", r.text());
    assert_eq!(r.json()["code"], "storage_full");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), before);
    // The daemon goes on.
    assert_eq!(c.get("/health").status, 200);
}

#[test]
fn zip_members_are_stored_or_deflated_by_their_content_not_their_name() {
    use agent_controller::protocol::FileKind;
    use std::io::Read;
    let dir = TempDir::new("zipsniff");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    let _w = register(&d.worker_client(), json!({"hostname": "z", "capabilities": ["browser"]}));
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "zip"}));
    let (runner, done) = test_agent.next();
    let random = noise(300_000);
    let text = "2026-11-23 12:00:00 INFO request served in 3 ms\n".repeat(6000);
    runner.store_file("random.txt", &random, FileKind::Generated).unwrap();
    runner.store_file("log.jpg", text.as_bytes(), FileKind::Generated).unwrap();
    let r = c.get(&format!("/sessions/{id}/files/zip"));
    assert_eq!(r.status, 200);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(r.body)).unwrap();
    for (name, method, content) in [
        ("random.txt", zip::CompressionMethod::Stored, random.clone()),
        ("log.jpg", zip::CompressionMethod::Deflated, text.clone().into_bytes()),
    ] {
        let mut entry = archive.by_name(name).unwrap();
        assert_eq!(entry.compression(), method, "{name}");
        let mut got = Vec::new();
        entry.read_to_end(&mut got).unwrap();
        assert_eq!(got, content, "{name}");
    }
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
}

#[test]
fn a_worker_killed_mid_command_is_lost_within_worker_timeout_and_the_session_moves_on() {
    use crate::support::llm::{llm_daemon, tool};
    let dir = TempDir::new("heartbeat");
    let script = vec![
        tool("run_command", json!({"command": "sleep 60", "timeout_s": 100})),
        tool("run_command", json!({"command": "echo moved-$((40+2))"})),
        tool("finish_task", json!({"summary": "the worker died"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| {
        c.server.worker_timeout_s = 2;
        c.server.long_poll_s = 1;
    });
    let worker = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
        .args(["--controller", &d.worker, "--capabilities", "shell", "--hostname", "beating-box"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut worker = ChildGuard(worker);
    let c = d.client();
    wait_until(Duration::from_secs(10), "the worker", || {
        c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == "beating-box").then_some(())
    });
    let id = create_session(&c, json!({"mode": "task", "type": "shell", "target": "beating-box", "instruction": "x"}));
    wait_until(Duration::from_secs(10), "the command to run", || {
        let steps = c.get(&format!("/sessions/{id}/log")).json();
        steps["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"].as_str().unwrap_or("").contains("sleep 60"))
            .then_some(())
    });
    // Busy and silent but for its heartbeats: still connected well past worker_timeout_s.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(llm.requests().len(), 1, "the command is still running");
    let w = c.get("/workers").json();
    assert_eq!(w[0]["connected"], true, "{w}");
    // A second capable worker, free: where the session goes once its own is lost.
    let spare = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
        .args(["--controller", &d.worker, "--capabilities", "shell", "--hostname", "spare-box"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _spare = ChildGuard(spare);
    wait_until(Duration::from_secs(10), "the spare worker", || {
        c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == "spare-box").then_some(())
    });
    // Killed mid-command: lost within worker_timeout_s (+ the 0.5 s check), not 100 s.
    worker.0.kill().unwrap();
    let killed = Instant::now();
    wait_until(Duration::from_secs(8), "the model to hear of it", || (llm.requests().len() >= 2).then_some(()));
    assert!(killed.elapsed() < Duration::from_secs(5), "{:?}", killed.elapsed());
    let told = llm.requests()[1].last_results()[0].to_string();
    assert!(told.contains("worker lost"), "{told}");
    assert!(told.contains("moved to worker spare-box"), "{told}");
    assert_eq!(wait_status(&c, &id, "finished")["worker"], "spare-box");
    let ran = llm.requests()[2].last_results()[0].to_string();
    assert!(ran.contains("moved-42"), "the next command ran on the new worker: {ran}");
}

#[test]
fn a_kill_during_the_first_turn_keeps_the_conversation_and_the_progress() {
    use crate::support::llm::{ScriptedLlm, tools};
    let dir = TempDir::new("journal-kill");
    let password = "Hunter2-journal-pw";
    let llm = ScriptedLlm::start(vec![tools(
        Some(&format!("I will log in with {password}, but first a question.")),
        &[("ask_user", json!({"question": "Which year?"}))],
    )]);
    std::fs::write(dir.path().join("config.yaml"), format!("api:\n  base_url: \"{}\"\n", llm.url)).unwrap();
    let Serving { mut child, stderr: _stderr, api, worker, .. } = start_serving(
        Command::new(binary())
            .args(["serve", "--api-port", "0", "--worker-port", "0"])
            .env("ANTHROPIC_API_KEY", "sk-test")
            .current_dir(dir.path()),
    );
    let c = Client::new(api, None);
    // A shell target: this worker never polls, and a browser session would open its page on it first.
    let _w = register(&Client::new(worker, None), json!({"hostname": "k", "capabilities": ["shell"]}));
    let id = create_session(
        &c,
        json!({"mode": "task", "type": "shell", "target": "k", "instruction": "report the year",
               "credentials": {"username": "alice", "password": password}}),
    );
    wait_until(Duration::from_secs(10), "the question", || {
        c.get(&format!("/sessions/{id}")).json()["question_pending"].is_object().then_some(())
    });
    // SIGKILL: no shutdown code runs; only what was appended as it happened is there.
    child.0.kill().unwrap();
    child.0.wait().unwrap();

    let out = dir.path().join("output");
    let journal = std::fs::read_to_string(out.join(&id).join("conversation.jsonl")).unwrap();
    assert!(!journal.contains(password), "the journal is scrubbed: {journal}");
    lock_released(&out);
    let d = TestDaemon::idle(test_config(&out));
    let c = d.client();
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!(s["error"], "interrupted by controller restart");
    assert_eq!(s["turn"], 1, "turn recovered from the journal: {s}");
    assert_eq!(s["usage"]["input_tokens"], 100, "usage recovered from the journal: {s}");
    let conv = c.get(&format!("/sessions/{id}/conversation")).json();
    assert!(conv["system"].as_str().unwrap().len() > 100, "{conv}");
    assert!(conv["tools"].as_array().unwrap().iter().any(|t| t == "ask_user"), "{conv}");
    let messages = conv["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "the opening, the model's first reply, its call closed: {conv}");
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0].to_string().contains("report the year"), "{conv}");
    assert_eq!(messages[1]["role"], "assistant");
    assert!(messages[1].to_string().contains("\"ask_user\""), "{conv}");
    assert!(messages[1].to_string().contains("[redacted]"), "secret masked in the message: {conv}");
    let closed = &messages[2]["content"][0];
    assert_eq!((closed["type"].as_str(), closed["is_error"].as_bool()), (Some("tool_result"), Some(true)), "{conv}");
    assert!(closed.to_string().contains("interrupted"), "{conv}");
    drop(d);

    // Resumed on a controller with a model again: it goes on from the journal, on its worker.
    let (d, llm) = crate::support::llm::llm_daemon(
        &out,
        vec![crate::support::llm::tool("finish_task", json!({"summary": "the year is 2026"}))],
        |_| {},
    );
    let c = d.client();
    let _k =
        ScriptedWorker::start(&d.worker_client(), "k", &["shell"], false, |_| json!({"success": true, "data": {}}));
    let r = c.post(&format!("/sessions/{id}/resume"), &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    let s = wait_status(&c, &id, "finished");
    assert_eq!((s["summary"].as_str(), s["worker"].as_str()), (Some("the year is 2026"), Some("k")), "{s}");
    assert!(s["error"].is_null(), "{s}");
    let sent = llm.requests()[0].body["messages"].to_string();
    assert!(sent.contains("report the year") && sent.contains("ask_user"), "the conversation so far: {sent}");
    assert!(sent.contains("interrupted") && sent.contains("The controller restarted"), "{sent}");
    llm.assert_well_formed();
    let messages = c.get(&format!("/sessions/{id}/conversation")).json()["messages"].as_array().unwrap().len();
    assert_eq!(
        messages, 5,
        "the journal goes on: the restart note joins the closed call, then the finish and its result"
    );
    assert_error(&c.post(&format!("/sessions/{id}/resume"), &json!({})), 409, "conflict");
}

/// Waits until the output folder's lock is free. It goes with the killed daemon's last
/// descriptor, and a child the daemon was forking at the kill holds a copy until its exec.
fn lock_released(out: &std::path::Path) {
    use std::os::fd::AsRawFd;
    wait_until(Duration::from_secs(10), "the killed daemon's lock to be released", || {
        let file = std::fs::File::open(out.join(agent_controller::store::LOCK_FILE)).ok()?;
        // SAFETY: flock on a descriptor we own; released when `file` drops.
        let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        free.then_some(())
    });
}

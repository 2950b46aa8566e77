//! Start-up, shutdown, restart persistence, config errors, exposure, secrets.

use crate::support::*;
use agent_controller::protocol::LogKind;
use agent_controller::session::AgentOutcome;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A shutdown under a running session is a typed end (`end`), beside the words in `error`; a
/// record written before that field existed, its error saying "interrupted", is read as one
/// too and may be resumed.
#[test]
fn an_interruption_is_a_typed_end_and_an_older_record_reads_as_one() {
    let dir = TempDir::new("typed-end");
    let id;
    {
        let (test_agent, agent) = TestAgent::new();
        let mut d = TestDaemon::start(test_config(dir.path()), agent);
        let c = d.client();
        let _w = register(&d.worker_client(), json!({"hostname": "r1", "capabilities": ["browser"]}));
        id = create_session(&c, json!({"mode": "explore", "target": "https://y.test"}));
        let _ = test_agent.next();
        wait_status(&c, &id, "running");
        d.shutdown();
    }
    let path = dir.path().join(&id).join("session.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(v["end"], json!({"kind": "interrupted", "by": "shutdown"}), "{v}");
    assert_eq!(v["error"], "interrupted: the controller shut down", "the words stay for readers");
    // As a controller before `end` wrote it.
    v.as_object_mut().unwrap().remove("end");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();

    let d = TestDaemon::idle(test_config(dir.path()));
    let c = d.client();
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!((s["status"].as_str(), s.get("end")), (Some("error"), None), "{s}");
    let r = c.post(&format!("/sessions/{id}/resume"), &json!({}));
    assert_eq!(r.status, 202, "an older interrupted record goes on: {}", r.text());
    let s = c.get(&format!("/sessions/{id}")).json();
    assert!(s.get("end").is_none() && s["error"].is_null(), "a resumed session has no end yet: {s}");
}

#[test]
fn sessions_survive_a_restart_and_interrupted_ones_become_errors() {
    let dir = TempDir::new("restart");
    let (finished_id, running_id);
    {
        let (test_agent, agent) = TestAgent::new();
        let d = TestDaemon::start(test_config(dir.path()), agent);
        let c = d.client();
        let _w1 = register(&d.worker_client(), json!({"hostname": "r1", "capabilities": ["browser"]}));
        let _w2 = register(&d.worker_client(), json!({"hostname": "r2", "capabilities": ["browser"]}));
        finished_id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "first"}));
        let (runner, done) = test_agent.next();
        runner.save_note(Some("Prices"), "A costs 1");
        runner.write_report("# Report\nAll good.");
        runner.write_conversation(&json!([{"role": "user", "content": "hi"}]));
        runner.store_file("out.csv", b"a,b\n1,2\n", agent_controller::protocol::FileKind::Generated).unwrap();
        runner.set_turn(3);
        runner.log(LogKind::Assistant, "working", None);
        done.send(AgentOutcome::Finished { summary: "all done".into() }).unwrap();
        wait_status(&c, &finished_id, "finished");
        running_id = create_session(&c, json!({"mode": "explore", "target": "https://y.test"}));
        let _ = test_agent.next();
        wait_status(&c, &running_id, "running");
        // Simulate a crash: write nothing more, just drop the in-memory state. A graceful
        // shutdown marks sessions itself, so fake the crash by rewriting the status on disk.
        let mut d = d;
        d.shutdown();
        let path = dir.path().join(&running_id).join("session.json");
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["status"], "error", "graceful shutdown marks active sessions");
        assert_eq!(v["error"], "interrupted: the controller shut down");
        v["status"] = json!("running");
        v["error"] = json!(null);
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    }
    // A damaged folder does not stop start-up.
    std::fs::create_dir_all(dir.path().join("sess_20000101_000000")).unwrap();
    std::fs::write(dir.path().join("sess_20000101_000000/session.json"), b"{broken").unwrap();

    let d = TestDaemon::idle(test_config(dir.path()));
    let c = d.client();
    let list = c.get("/sessions").json();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let s = c.get(&format!("/sessions/{finished_id}")).json();
    assert_eq!(s["status"], "finished");
    assert_eq!(s["summary"], "all done");
    assert_eq!(s["turn"], 3);
    assert_eq!(s["files"], 1);
    assert_eq!(c.get(&format!("/sessions/{finished_id}/report")).json()["report"], "# Report\nAll good.");
    let notes = c.get(&format!("/sessions/{finished_id}/notes")).json();
    assert_eq!(notes[0]["title"], "Prices");
    assert_eq!(notes[0]["content"], "A costs 1");
    assert_eq!(c.get(&format!("/sessions/{finished_id}/files/out.csv")).text(), "a,b\n1,2\n");
    assert_eq!(c.get(&format!("/sessions/{finished_id}/files")).json()[0]["type"], "generated");
    let log = c.get(&format!("/sessions/{finished_id}/log")).json();
    assert!(log["entries"].as_array().unwrap().iter().any(|e| e["text"] == "working"));
    let conv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(&finished_id).join("conversation_log.json")).unwrap())
            .unwrap();
    assert_eq!(conv[0]["content"], "hi");

    let s = c.get(&format!("/sessions/{running_id}")).json();
    assert_eq!(s["status"], "error");
    assert_eq!(s["error"], "interrupted by controller restart");
    assert_eq!(s["end"], json!({"kind": "interrupted", "by": "restart"}), "a typed end: {s}");
    let log = c.get(&format!("/sessions/{running_id}/log")).json();
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "error");
    // New sessions still get unique ids next to the old ones.
    let new_id = create_session(&c, json!({"mode": "explore", "target": "z"}));
    assert_ne!(new_id, finished_id);
}

#[test]
fn binary_binds_port_zero_and_stops_on_sigterm_within_two_seconds() {
    let dir = TempDir::new("sigterm");
    // A model that takes its time keeps the session running until the signal.
    let llm = crate::support::llm::ScriptedLlm::start(vec![
        crate::support::llm::text("slow").delayed(Duration::from_secs(30)),
    ]);
    std::fs::write(dir.path().join("config.yaml"), format!("api:\n  base_url: \"{}\"\n", llm.url)).unwrap();
    let Serving { mut child, stderr: _stderr, api, worker, .. } = start_serving(
        Command::new(binary())
            .args(["serve", "--api-port", "0", "--worker-port", "0"])
            .env("ANTHROPIC_API_KEY", "sk-test")
            .current_dir(dir.path()),
    );
    // `serve` re-executed itself once (same pid) with glibc's thread cache off, keeping its name.
    let pid = child.0.id();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("AGENT_CONTROLLER_MALLOC_TUNED=1"), "not re-executed");
    assert!(environ.contains("glibc.malloc.tcache_count=0"), "GLIBC_TUNABLES not set");
    assert_eq!(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap().trim(), "agent-controlle");
    let c = Client::new(api, None);
    let w = Client::new(worker, None);
    // A shell session: a browser one would open its page on the worker first.
    let (worker_id, w) = register_as(&w, json!({"hostname": "h", "capabilities": ["shell"]}));
    let id = create_session(&c, json!({"mode": "explore", "type": "shell", "target": "h"}));
    wait_status(&c, &id, "running");
    // A parked worker poll and a parked log poll must both be answered by the shutdown.
    let w2 = w.clone();
    let poll = std::thread::spawn(move || w2.get(&format!("/command?worker_id={worker_id}")));
    let c2 = c.clone();
    let next = c.get(&format!("/sessions/{id}/log")).json()["next"].as_u64().unwrap();
    let log_poll = std::thread::spawn(move || c2.get(&format!("/sessions/{id}/log?after={next}&wait=30")));
    // Time for both polls to park (nothing to observe them by; generous for a loaded machine).
    std::thread::sleep(Duration::from_millis(1000));
    let t = Instant::now();
    signal(child.0.id(), libc::SIGTERM);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(2), "did not exit within 2 s");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(poll.join().unwrap().json(), json!({"action": "wait"}));
    assert_eq!(log_poll.join().unwrap().status, 200);
    let sess = std::fs::read_dir(dir.path().join("output"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("sess_"))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(sess.join("session.json")).unwrap()).unwrap();
    assert_eq!(v["status"], "error");
    assert_eq!(v["error"], "interrupted: the controller shut down");
}

/// Send `sig` directly (no `kill` process to spawn, so timings measure only the daemon).
fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) takes plain integers; the pid is our own child, not yet reaped.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

fn run_binary(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(binary());
    cmd.args(args).current_dir(dir).stdout(Stdio::null()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn config_errors_name_the_key_and_exit_2() {
    let dir = TempDir::new("configerr");
    let cases = [
        ("server:\n  api_prot: 5900\n", "api_prot"),
        ("server:\n  api_port: lots\n", "server.api_port"),
        ("logging:\n  level: loud\n", "logging.level"),
        ("api:\n  provider: acme\n", "api.provider"),
        ("surprise: true\n", "surprise"),
        ("server:\n  long_poll_s: 0\n", "server.long_poll_s"),
        ("server:\n  long_poll_s: 90\n", "server.long_poll_s"),
        ("task:\n  confirmation_timeout: 99999999999\n", "task.confirmation_timeout"),
    ];
    for (yaml, key) in cases {
        std::fs::write(dir.path().join("bad.yaml"), yaml).unwrap();
        let (code, stderr) = run_binary(dir.path(), &["--config", "bad.yaml"], &[]);
        assert_eq!(code, 2, "{yaml:?}: {stderr}");
        assert!(stderr.contains(key), "{yaml:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one clear line, no trace: {stderr}");
    }
    let (code, stderr) = run_binary(dir.path(), &["--config", "missing.yaml"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.yaml"), "{stderr}");
    let (code, stderr) = run_binary(dir.path(), &["--api-port", "notaport"], &[]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _) = run_binary(dir.path(), &["frobnicate"], &[]);
    assert_eq!(code, 2);
}

#[test]
fn non_loopback_without_tokens_refuses_to_start() {
    let dir = TempDir::new("exposed");
    let (code, stderr) = run_binary(dir.path(), &["--host", "0.0.0.0", "--api-port", "0", "--worker-port", "0"], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("api_token") && stderr.contains("--insecure"), "{stderr}");
    // One token is not enough: an open worker port would let anyone pose as a worker.
    let (code, stderr) = run_binary(
        dir.path(),
        &["--host", "0.0.0.0", "--api-port", "0", "--worker-port", "0"],
        &[("AGENT_CONTROLLER_TOKEN", "tok-from-env-123")],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("worker_token"), "{stderr}");
    // Both tokens, but they would cross the network in clear (tests/tls.rs starts it with TLS).
    let tokens =
        [("AGENT_CONTROLLER_TOKEN", "tok-from-env-123"), ("AGENT_CONTROLLER_WORKER_TOKEN", "worker-tok-from-env-456")];
    let (code, stderr) =
        run_binary(dir.path(), &["--host", "0.0.0.0", "--api-port", "0", "--worker-port", "0"], &tokens);
    assert_eq!(code, 2);
    assert!(stderr.contains("server.tls_cert") && stderr.contains("--insecure"), "{stderr}");
    // With both tokens and --insecure (something else encrypts) it starts (then we stop it).
    let Serving { mut child, stderr: _stderr, api, lines, .. } = start_serving(
        Command::new(binary())
            .args(["--host", "0.0.0.0", "--api-port", "0", "--worker-port", "0", "--insecure"])
            .env("AGENT_CONTROLLER_TOKEN", "tok-from-env-123")
            .env("AGENT_CONTROLLER_WORKER_TOKEN", "worker-tok-from-env-456")
            .current_dir(dir.path()),
    );
    let port = api.rsplit(':').next().unwrap();
    let c = Client::new(format!("http://127.0.0.1:{port}"), None);
    assert_error(&c.get("/sessions"), 401, "unauthorized");
    assert_eq!(c.with_token(Some("tok-from-env-123")).get("/sessions").status, 200);
    assert!(!lines.concat().contains("tok-from-env-123") && !lines.concat().contains("worker-tok-from-env-456"));
    signal(child.0.id(), libc::SIGINT);
    assert!(child.0.wait().unwrap().success());
}

#[test]
fn planted_secrets_never_reach_disk_logs_or_responses() {
    let dir = TempDir::new("secrets");
    let log_file = dir.path().join("daemon.log");
    let mut config = test_config(&dir.path().join("out"));
    config.logging.file = log_file.to_string_lossy().into_owned();
    config.api.api_key = agent_controller::util::secret::Secret::new("sk-ant-PLANTED-API-KEY");
    let password = "PLANTED-pa55w0rd-xyz";
    let bot_token = "123456:PLANTED-BOT-TOKEN";
    let hook_query = "token=PLANTED-HOOK-SECRET";
    let (test_agent, agent) = TestAgent::new();
    // The log file is written by the binary's logger; in-process we check what the library
    // returns and writes, and run the binary separately below for its log.
    let d = TestDaemon::start(config, agent);
    let c = d.client();
    let _ = register(&d.worker_client(), json!({"hostname": "s", "capabilities": ["browser"]}));
    let r = c.post(
        "/sessions",
        &json!({
            "mode": "explore", "target": "https://x.test",
            "credentials": {"username": "alice", "password": password},
            "notifications": {"telegram": {"bot_token": bot_token, "chat_id": "42"},
                              "webhook": {"url": format!("https://hooks.test/x?{hook_query}"), "method": "POST"}}
        }),
    );
    assert_eq!(r.status, 201);
    let mut responses = r.text();
    let id = r.json()["session_id"].as_str().unwrap().to_string();
    let (runner, done) = test_agent.next();
    // The agent can read the password from the vault (to type it on the worker)…
    assert_eq!(runner.credentials().unwrap().password.expose(), password);
    // …and anything it echoes back is scrubbed before it lands.
    runner.log(LogKind::Tool, &format!("typing {password}"), Some(json!({"value": password, "hook": hook_query})));
    runner.save_note(None, &format!("bot {bot_token}"));
    runner.write_report(&format!("report with {password}"));
    runner.write_conversation(&json!([{"content": format!("pw {password} token {bot_token}")}]));
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!(s["has_credentials"], true);
    assert_eq!(s["notifications"], json!({"telegram": true, "webhook": true}));
    for path in ["", "/log", "/notes", "/report", "/files"] {
        responses.push_str(&c.get(&format!("/sessions/{id}{path}")).text());
    }
    responses.push_str(&c.get("/sessions").text());
    done.send(AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &id, "finished");
    drop(d);
    let planted = [password, bot_token, hook_query, "PLANTED-HOOK-SECRET", "sk-ant-PLANTED-API-KEY"];
    for (path, bytes) in all_files(dir.path()) {
        let text = String::from_utf8_lossy(&bytes);
        for p in planted {
            assert!(!text.contains(p), "{p} found in {path:?}");
        }
    }
    for p in planted {
        assert!(!responses.contains(p), "{p} found in an API response");
    }
    assert!(responses.contains("[redacted]"), "echoed secrets are replaced, not dropped silently");
}

#[test]
fn daemon_log_never_shows_tokens() {
    let dir = TempDir::new("daemonlog");
    let llm = crate::support::llm::ScriptedLlm::start(vec![
        crate::support::llm::text("slow").delayed(Duration::from_secs(30)),
    ]);
    std::fs::write(
        dir.path().join("config.yaml"),
        format!("logging:\n  level: trace\n  file: daemon.log\nserver:\n  api_port: 0\n  worker_port: 0\napi:\n  base_url: \"{}\"\n", llm.url),
    )
    .unwrap();
    let Serving { mut child, mut stderr, api, worker, mut lines, .. } = start_serving(
        Command::new(binary())
            .current_dir(dir.path())
            .env("AGENT_CONTROLLER_TOKEN", "PLANTED-API-TOKEN-1")
            .env("AGENT_CONTROLLER_WORKER_TOKEN", "PLANTED-WORKER-TOKEN-2")
            .env("ANTHROPIC_API_KEY", "sk-ant-PLANTED-3"),
    );
    let c = Client::new(api, Some("PLANTED-API-TOKEN-1".into()));
    let w = Client::new(worker, Some("PLANTED-WORKER-TOKEN-2".into()));
    register(&w, json!({"hostname": "l", "capabilities": ["browser"]}));
    let id = create_session(
        &c,
        json!({"mode": "explore", "target": "https://x.test", "credentials": {"username": "u", "password": "PLANTED-PASSWORD-4"}}),
    );
    wait_status(&c, &id, "running");
    assert_error(&c.with_token(Some("wrong")).get("/sessions"), 401, "unauthorized");
    c.delete(&format!("/sessions/{id}"));
    signal(child.0.id(), libc::SIGTERM);
    assert!(child.0.wait().unwrap().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    lines.push(rest);
    let all = format!("{}{}", lines.concat(), std::fs::read_to_string(dir.path().join("daemon.log")).unwrap());
    assert!(all.contains("created"), "the log file has content: {all}");
    for p in ["PLANTED-API-TOKEN-1", "PLANTED-WORKER-TOKEN-2", "sk-ant-PLANTED-3", "PLANTED-PASSWORD-4"] {
        assert!(!all.contains(p), "{p} in daemon log");
    }
    for (path, bytes) in all_files(&dir.path().join("output")) {
        assert!(!String::from_utf8_lossy(&bytes).contains("PLANTED"), "secret in {path:?}");
    }
}

/// A daemon killed (an `eval` run's, say) leaves its fronts' socket folders in the temporary
/// directory; the next daemon removes those whose process is gone, and no live one's.
#[test]
fn a_daemon_sweeps_the_socket_folders_of_killed_ones() {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let tmp = std::env::temp_dir();
    let stale = tmp.join(format!("agent-controller-{dead}-api-5e1f5e1f5e1f5e1f"));
    let live = tmp.join(format!("agent-controller-{}-api-1a1a1a1a1a1a1a1a", std::process::id()));
    let kept = tmp.join(format!("agent-controller-{dead}-worker-api-6e6e6e6e6e6e6e6e"));
    for dir in [&stale, &live, &kept] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("http.sock"), b"").unwrap();
    }
    std::fs::write(kept.join("something else"), b"not ours to delete").unwrap();
    let dir = TempDir::new("sweep");
    let _d = TestDaemon::idle(test_config(dir.path()));
    let (stale_there, live_there, kept_there) = (stale.exists(), live.exists(), kept.exists());
    for d in [&stale, &live, &kept] {
        let _ = std::fs::remove_dir_all(d);
    }
    assert!(!stale_there, "the dead daemon's folder is removed");
    assert!(live_there, "a running process's folder stays");
    assert!(kept_there, "a folder holding more than a socket stays");
}

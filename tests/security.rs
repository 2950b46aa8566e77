//! Issue 16's attacks, each as a test: a rogue worker, encoded secrets, `env` from the model,
//! private webhooks, planted links and the caps.

use crate::support::*;
use serde_json::json;

/// A worker that registered asking for a secret cannot be spoken for by anyone else: not by a
/// bare request, not by its id without the secret, not by registering its hostname.
#[test]
fn a_rogue_client_cannot_pose_as_a_secret_holding_worker() {
    let dir = TempDir::new("rogue");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    let d = TestDaemon::idle(config);
    let w = d.worker_client();
    let body = json!({"hostname": "real", "capabilities": ["browser"], "use_secret": true});
    let (id, real) = register_as(&w, body.clone());
    let hex = id.strip_prefix("wkr_").unwrap();
    assert!(hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    assert!(real.secret.as_ref().unwrap().len() >= 32);
    // Bare requests do not reach it (it is the only worker, from the same address).
    assert_error(&w.get("/command"), 404, "not_found");
    assert_error(&w.post("/result", &json!({"id": "cmd_1", "success": true})), 404, "not_found");
    // Its id without the secret, or with a wrong one, is refused.
    assert_error(&w.get(&format!("/command?worker_id={id}")), 403, "forbidden");
    assert_error(&w.with_secret("0000").get(&format!("/command?worker_id={id}")), 403, "forbidden");
    // Its hostname cannot take it over while it is connected…
    assert_error(&w.post("/register", &body), 409, "conflict");
    assert_error(&w.post("/register", &json!({"hostname": "real", "has_playwright": true})), 409, "conflict");
    // …but the worker itself, proving its secret, resumes its id.
    let r = real.post("/register", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["worker_id"], id.as_str());
    let new_secret = r.json()["worker_secret"].as_str().unwrap().to_string();
    assert_ne!(Some(&new_secret), real.secret.as_ref(), "each registration gets a new secret");
    assert_error(&real.get(&format!("/command?worker_id={id}")), 403, "forbidden");
    let r = w.with_secret(&new_secret).get(&format!("/command?worker_id={id}"));
    assert_eq!(r.json(), json!({"action": "wait"}));
    assert_eq!(d.client().get("/workers").json().as_array().unwrap().len(), 1);
}

/// Off loopback (here: `legacy_workers: false`) bare requests are refused and every worker
/// holds a secret, whatever its register body says.
#[test]
fn without_legacy_workers_bare_requests_are_refused() {
    let dir = TempDir::new("nolegacy");
    let mut config = test_config(dir.path());
    config.server.legacy_workers = Some(false);
    let d = TestDaemon::idle(config);
    let w = d.worker_client();
    let seed = json!({"hostname": "OFFICE-PC-01", "has_playwright": true});
    let (id, _) = register_as(&w, seed.clone());
    assert_error(&w.get("/command"), 403, "forbidden");
    assert_error(&w.get(&format!("/command?worker_id={id}")), 403, "forbidden");
    assert_error(&w.post("/register", &seed), 409, "conflict");
}

/// With legacy workers on, a bare worker and a secret-holding one live side by side; bare
/// requests reach only the bare one.
#[test]
fn bare_requests_map_only_to_bare_workers() {
    let dir = TempDir::new("baremap");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    let d = TestDaemon::idle(config);
    let w = d.worker_client();
    let (secret_id, _) = register_as(&w, json!({"hostname": "s", "capabilities": ["shell"], "use_secret": true}));
    // The last registration from this address holds a secret: bare requests find nobody.
    assert_error(&w.get("/command"), 404, "not_found");
    let (bare_id, _) = register_as(&w, json!({"hostname": "b", "has_playwright": true}));
    assert_ne!(bare_id, secret_id);
    assert_eq!(w.get("/command").json(), json!({"action": "wait"}));
    // A bare worker may be resumed by hostname, as the seed's were.
    assert_eq!(register(&w, json!({"hostname": "b", "has_playwright": true})), bare_id);
}

#[test]
fn registered_workers_are_capped() {
    let dir = TempDir::new("maxworkers");
    let mut config = test_config(dir.path());
    config.server.max_workers = 2;
    let d = TestDaemon::idle(config);
    let w = d.worker_client();
    register(&w, json!({"hostname": "a", "capabilities": ["browser"]}));
    register(&w, json!({"hostname": "b", "capabilities": ["browser"]}));
    assert_error(&w.post("/register", &json!({"hostname": "c", "capabilities": ["browser"]})), 503, "unavailable");
    // A known hostname still comes back.
    register(&w, json!({"hostname": "a", "capabilities": ["browser"]}));
}

/// A password leaks URL-, form-, base64- or JSON-encoded (a form post echoed back, a request
/// log): none of the forms reaches the log or the notes.
#[test]
fn encoded_secrets_are_scrubbed_and_short_ones_refused() {
    let dir = TempDir::new("encoded");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    let _w = ScriptedWorker::start(&d.worker_client(), "b", &["browser"], false, |_| json!({"success": true}));
    let short = json!({"mode": "task", "target": "https://x.test", "instruction": "go",
                       "credentials": {"username": "u", "password": "abc"}});
    let r = c.post("/sessions", &short);
    assert_error(&r, 400, "bad_request");
    assert!(r.json()["error"].as_str().unwrap().contains("shorter than 4"), "{}", r.text());
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "go",
               "credentials": {"username": "u", "password": "Hunter2 S3cret!pw"}}),
    );
    let (runner, done) = test_agent.next();
    let leaks = ["Hunter2+S3cret%21pw", "Hunter2%20S3cret%21pw", "Hunter2%20S3cret!pw", "SHVudGVyMiBTM2NyZXQhcHc="];
    for leak in leaks {
        runner.log(agent_controller::protocol::LogKind::System, &format!("POST /login body: p={leak}&u=u"), None);
        runner.save_note(None, &format!("saw {leak}"));
    }
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &id, "finished");
    let log = std::fs::read_to_string(dir.path().join(&id).join("log.jsonl")).unwrap();
    let notes = c.get(&format!("/sessions/{id}/notes")).text();
    for leak in leaks {
        assert!(!log.contains(leak) && !notes.contains(leak), "{leak} leaked");
    }
    assert!(log.contains("p=[redacted]&u=u"), "{log}");
}

fn real_worker(controller: &str, hostname: &str, extra: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_agent-worker"));
    c.args(["--controller", controller, "--capabilities", "shell", "--hostname", hostname]).args(extra);
    c
}

/// `env` (and `cat` of the token file) run by the model: no API key, no worker token.
#[test]
fn shell_commands_see_a_clean_environment_and_no_token() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("cleanenv");
    let mut config = test_config(dir.path());
    config.server.worker_token = agent_controller::util::secret::Secret::new("wtok-PLANTED-0123456789");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let tokens = TempDir::new("tokfile");
    let file = tokens.path().join("token");
    std::fs::write(&file, "wtok-PLANTED-0123456789\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = file.display().to_string();
    // A token file others can read is refused (usage error).
    let out = real_worker(&d.worker, "env-box", &["--token-file", &path]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _worker = ChildGuard(
        real_worker(&d.worker, "env-box", &["--token-file", &path])
            .env("ANTHROPIC_API_KEY", "sk-ant-PLANTED")
            .env_remove("AGENT_CONTROLLER_WORKER_TOKEN")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let c = d.client();
    wait_until(std::time::Duration::from_secs(10), "the worker to register", || {
        c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == "env-box").then_some(())
    });
    create_session(&c, json!({"mode": "task", "type": "shell", "target": "env-box", "instruction": "x"}));
    let (runner, _done) = test_agent.next();
    let out = runner
        .execute("run_command", json!({"command": format!("env; cat {path}")}), std::time::Duration::from_secs(30))
        .unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(!stdout.contains("sk-ant-PLANTED") && !stdout.contains("ANTHROPIC_API_KEY"), "{stdout}");
    assert!(!stdout.contains("wtok-PLANTED"), "{stdout}");
    assert!(stdout.contains("[redacted]"), "the token file's content is scrubbed: {stdout}");
    assert!(stdout.contains("PATH=") && stdout.contains("PAGER=cat"), "{stdout}");
    for line in stdout.lines().filter(|l| l.contains('=') && !l.starts_with('[')) {
        let key = line.split('=').next().unwrap();
        let allowed = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "TZ", "SHELL", "TMPDIR"];
        let pager =
            ["PAGER", "SYSTEMD_PAGER", "GIT_PAGER", "MANPAGER", "NO_COLOR", "DEBIAN_FRONTEND", "PWD", "SHLVL", "_"];
        assert!(allowed.contains(&key) || pager.contains(&key), "{key} leaked into the command's environment");
    }
}

/// `--token` on argv still works, with a warning that `ps` shows it.
#[test]
fn a_token_on_the_command_line_is_warned_about() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = ChildGuard(
        real_worker(&format!("http://127.0.0.1:{port}"), "argv-box", &["--token", "wtok-argv-0123456789"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = std::io::BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(line.contains("visible") && line.contains("--token-file"), "{line}");
}

/// Capabilities and hostnames with control characters never reach the daemon's log.
#[test]
fn register_refuses_control_characters() {
    let dir = TempDir::new("regctl");
    let d = TestDaemon::idle(test_config(dir.path()));
    let w = d.worker_client();
    let bad = [
        json!({"hostname": "h", "capabilities": ["browser\n2026-01-01 [INFO] worker wkr_x registered"]}),
        json!({"hostname": "h", "capabilities": ["a\u{1b}[2J"]}),
        json!({"hostname": "h\nfake line", "capabilities": ["browser"]}),
        json!({"hostname": "h", "capabilities": ["x".repeat(65)]}),
    ];
    for body in bad {
        assert_error(&w.post("/register", &body), 400, "bad_request");
    }
    assert!(d.client().get("/workers").json().as_array().unwrap().is_empty());
}

/// `HOSTA` and `hostA ` are one worker: the second is refused while the first holds its secret,
/// and with the secret it resumes the same id, so `/workers` never lists two look-alikes.
#[test]
fn worker_names_are_one_whatever_their_case_and_spaces() {
    let dir = TempDir::new("regcase");
    let d = TestDaemon::idle(test_config(dir.path()));
    let w = d.worker_client();
    let (id, owner) = register_as(&w, json!({"hostname": "HOSTA", "capabilities": ["shell"], "use_secret": true}));
    let again = json!({"hostname": "hostA ", "capabilities": ["shell"], "use_secret": true});
    assert_error(&w.post("/register", &again), 409, "conflict");
    let (resumed, _) = register_as(&owner, again);
    assert_eq!(resumed, id);
    let workers = d.client().get("/workers").json();
    assert_eq!(workers.as_array().unwrap().len(), 1, "{workers}");
}

/// Folders 0700 and files 0600 even under a permissive umask.
#[test]
fn session_folders_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("perms");
    // SAFETY: umask(2) is process-wide; 0 only widens what other tests create meanwhile.
    let old = unsafe { libc::umask(0) };
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _w = ScriptedWorker::start(&d.worker_client(), "p", &["browser"], false, |_| json!({"success": true}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (runner, done) = test_agent.next();
    runner.save_note(None, "a note");
    runner.store_file("out.txt", b"hello", agent_controller::protocol::FileKind::Generated).unwrap();
    let stored = runner.save_tool_output("run_command", "a long output").unwrap();
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&d.client(), &id, "finished");
    unsafe { libc::umask(old) };
    let mode = |p: std::path::PathBuf| std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    let sess = dir.path().join(&id);
    for sub in ["", "files", "screenshots", "tool_outputs"] {
        assert_eq!(mode(sess.join(sub)), 0o700, "{sub}");
    }
    let output = format!("tool_outputs/{stored}.txt");
    for f in ["session.json", "log.jsonl", "notes.json", "files/out.txt", output.as_str()] {
        assert_eq!(mode(sess.join(f)), 0o600, "{f}");
    }
}

/// A `files/` folder replaced by a link to elsewhere is neither listed, served nor written.
#[test]
fn a_symlinked_files_folder_is_not_followed() {
    let dir = TempDir::new("symfiles");
    let elsewhere = TempDir::new("symtarget");
    std::fs::write(elsewhere.path().join("secret.txt"), b"outside").unwrap();
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _w = ScriptedWorker::start(&d.worker_client(), "s", &["browser"], false, |_| json!({"success": true}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (runner, done) = test_agent.next();
    let files = dir.path().join(&id).join("files");
    std::fs::remove_dir(&files).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &files).unwrap();
    assert!(runner.store_file("new.txt", b"x", agent_controller::protocol::FileKind::Generated).is_err());
    assert!(!elsewhere.path().join("new.txt").exists());
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&d.client(), &id, "finished");
    drop(d);
    // After a restart the index is rebuilt from disk: the link is not followed.
    let d = TestDaemon::idle(test_config(dir.path()));
    let listed = d.client().get(&format!("/sessions/{id}/files")).json();
    assert!(!listed.to_string().contains("secret.txt"), "{listed}");
    assert_error(&d.client().get(&format!("/sessions/{id}/files/secret.txt")), 404, "not_found");
}

#[test]
fn active_sessions_are_capped() {
    let dir = TempDir::new("maxsessions");
    let mut config = test_config(dir.path());
    config.server.max_sessions = 1;
    let d = TestDaemon::idle(config);
    let c = d.client();
    let first = create_session(&c, json!({"mode": "explore", "target": "https://a.test"}));
    assert_error(&c.post("/sessions", &json!({"mode": "explore", "target": "https://b.test"})), 503, "unavailable");
    c.delete(&format!("/sessions/{first}"));
    wait_status(&c, &first, "stopped");
    create_session(&c, json!({"mode": "explore", "target": "https://c.test"}));
}

/// Webhooks to internal addresses are refused, and the log says nothing about the port.
#[test]
fn webhooks_to_private_addresses_are_refused() {
    use crate::support::llm::*;
    let dir = TempDir::new("privhook");
    let hook = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/hook", hook.local_addr().unwrap().port());
    let script =
        vec![tool("send_notification", json!({"message": "hello"})), tool("finish_task", json!({"summary": "done"}))];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _w = ScriptedWorker::start(&d.worker_client(), "n", &["browser"], false, |_| json!({"success": true}));
    let id = create_session(
        &d.client(),
        json!({"mode": "task", "target": "https://x.test", "instruction": "x",
               "notifications": {"webhook": {"url": url}}}),
    );
    wait_status(&d.client(), &id, "finished");
    hook.set_nonblocking(true).unwrap();
    assert!(hook.accept().is_err(), "the daemon connected to a loopback webhook");
    let result = llm.requests()[1].last_results()[0]["content"].to_string();
    assert!(result.contains("refused") && result.contains("allow_private"), "{result}");
}

/// An exploration of a shell target asks the validator before each command, and a command
/// that changes the host never reaches the worker.
#[test]
fn explore_on_a_shell_defaults_to_the_validator() {
    use crate::support::llm::*;
    let dir = TempDir::new("explorepolicy");
    let script = vec![
        tool("run_command", json!({"command": "rm -rf /srv/data"})),
        text("REJECT REASON: an exploration must not delete anything"),
        tool("finish_exploration", json!({"summary": "looked"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let w = ScriptedWorker::start(&d.worker_client(), "sh", &["shell"], false, |_| json!({"success": true}));
    let c = d.client();
    let id = create_session(&c, json!({"mode": "explore", "type": "shell", "target": "sh", "goal": "what runs here"}));
    wait_status(&c, &id, "finished");
    assert!(w.seen.lock().unwrap().is_empty(), "the command reached the worker");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    let validator = reqs[1].body.to_string();
    assert!(reqs[1].body.get("tools").is_none() && validator.contains("Exploration (observe only"), "{validator}");
    assert!(validator.contains("changes the host at all"), "the validator's prompt: {validator}");
    let result = reqs[2].last_results()[0]["content"].to_string();
    assert!(result.contains("rejected it: an exploration must not delete anything"), "{result}");
}

/// Idle half-open connections, and zip downloads nobody reads: `/health` keeps answering, and
/// the handler threads the slow readers hold are freed by the send timeout.
#[test]
fn half_open_and_slow_connections_do_not_freeze_a_port() {
    use std::io::Write;
    use std::time::Duration;
    let dir = TempDir::new("halfopen");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    config.server.io_timeout_s = 2;
    let threads = config.server.api_threads;
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let api = d.api.trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    for _ in 0..50 {
        let mut s = std::net::TcpStream::connect(&api).unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(50));
    let (status, took) = raw_health(&api, Duration::from_secs(5));
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(100), "/health took {took:?} beside 50 half-open connections");
    // Every handler thread streaming a zip to a client that never reads.
    let _w = ScriptedWorker::start(&d.worker_client(), "z", &["browser"], false, |_| json!({"success": true}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (runner, _done) = test_agent.next();
    // Incompressible, so each zip fills the socket buffers at once and then blocks.
    let big = crate::support::noise(48 << 20);
    runner.store_file("big.bin", &big, agent_controller::protocol::FileKind::Generated).unwrap();
    for _ in 0..threads + 2 {
        let mut s = std::net::TcpStream::connect(&api).unwrap();
        write!(s, "GET /sessions/{id}/files/zip HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    // Each pinned thread is freed once a write to its client has taken the 2 s send timeout
    // (about 1.6 s from here), well before the relay would give up on an answer (6 s).
    let (status, took) = raw_health(&api, Duration::from_secs(20));
    assert_eq!(status, 200, "the handler pool stayed pinned by slow readers");
    eprintln!("/health behind the slow readers: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A handler that does not answer within three idle timeouts: the client is told 503.
#[test]
fn an_answer_that_never_begins_is_a_503() {
    let dir = TempDir::new("stall");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    config.server.io_timeout_s = 2;
    let (_test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let t = std::time::Instant::now();
    assert_error(&d.client().get("/__test/stall"), 503, "unavailable");
    let took = t.elapsed();
    assert!(took >= std::time::Duration::from_secs(6) && took < std::time::Duration::from_secs(8), "{took:?}");
}

/// A client that reads a download just fast enough to keep each blocked write short of the
/// send timeout is still cut off: a whole write is bounded, not only each system call.
#[test]
fn a_trickling_reader_is_cut_off() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let dir = TempDir::new("trickle");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    config.server.io_timeout_s = 2;
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let _w = register(&d.worker_client(), json!({"hostname": "z", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (runner, _done) = test_agent.next();
    runner
        .store_file("big.bin", &crate::support::noise(32 << 20), agent_controller::protocol::FileKind::Generated)
        .unwrap();
    let mut s = std::net::TcpStream::connect(d.api.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /sessions/{id}/files/zip HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 64 << 10];
    let mut got = 0usize;
    let mut read = |s: &mut std::net::TcpStream| match s.read(&mut buf) {
        Ok(n) => n,
        Err(e) => panic!("the download failed instead of ending: {e}"),
    };
    // 128 KiB a second for 6 s: each read opens the window a little, so a blocked write makes
    // some progress within every 2 s; the whole write does not.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(6) {
        got += read(&mut s);
        std::thread::sleep(Duration::from_millis(500));
    }
    // Then as fast as it comes: what the socket buffers hold, then the daemon's close.
    loop {
        match read(&mut s) {
            0 => break,
            n => got += n,
        }
    }
    eprintln!("a trickling reader got {got} bytes of a 32 MiB zip, then the end");
    assert!(got < 16 << 20, "the whole zip went through ({got} bytes)");
}

#[test]
fn a_large_download_is_fetched_only_once_approved() {
    use crate::agent::approve_when_asked;
    use crate::support::llm::{llm_daemon, tool};
    use crate::support::site::{Site, pdf_bytes};
    use crate::support::worker::{RealWorker, have_chromium};
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("download-gate");
    let script = vec![
        tool("browser_download", json!({"url": format!("{}/big/3.bin", site.url), "filename": "denied.bin"})),
        tool("browser_download", json!({"url": format!("{}/stream/3.bin", site.url), "filename": "approved.bin"})),
        tool("browser_download", json!({"url": format!("{}/files/chapter1.pdf", site.url)})),
        tool("finish_task", json!({"summary": "two files"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.files.approve_downloads_over_mb = 1);
    let _worker = RealWorker::start(&d, "gate-box", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{}/", site.url), "instruction": "get the files",
               "options": {"approval": "human"}}),
    );
    // The size announced by the server, asked about before the body is fetched.
    let first = approve_when_asked(&c, &id, false);
    assert_eq!(first["details"]["arguments"]["size"], "3.1 MB", "{first}");
    // No length announced: the worker stops at the threshold and asks.
    let second = approve_when_asked(&c, &id, true);
    assert_eq!(second["details"]["arguments"]["size"], "more than 1.0 MB (size not announced)", "{second}");
    // The small file needs no approval: nobody answers a third question, yet the session ends.
    wait_status(&c, &id, "finished");
    let reqs = llm.requests();
    assert!(reqs[1].last_results()[0].to_string().contains("not run: the user denied it"), "{:?}", reqs[1]);
    let files = c.get(&format!("/sessions/{id}/files")).json();
    let names: Vec<&str> = files.as_array().unwrap().iter().map(|f| f["filename"].as_str().unwrap()).collect();
    assert!(!names.contains(&"denied.bin"), "{files}");
    assert_eq!(c.get(&format!("/sessions/{id}/files/approved.bin")).body.len(), 3 * 1024 * 1024);
    assert_eq!(c.get(&format!("/sessions/{id}/files/chapter1.pdf")).body, pdf_bytes("chapter1.pdf"));
}

/// What a person types (an answer, an edited command, a reason for a denial) reaches the model
/// and the disk without a vault secret in it, in any of its encodings; an edited command still
/// runs as typed.
#[test]
fn what_a_person_types_reaches_the_model_without_secrets() {
    use crate::support::llm::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use std::time::Duration;
    let dir = TempDir::new("typedsecrets");
    let pw = "Vault-PW-7319";
    let hex: String = pw.bytes().map(|b| format!("{b:02X}")).collect();
    let basic = STANDARD.encode(format!("bob:{pw}"));
    let shifted = STANDARD.encode(format!("x{pw}"));
    let script = vec![
        tool("ask_user", json!({"question": "Which one?"})),
        tool("run_command", json!({"command": "echo hi"})),
        tool("run_command", json!({"command": "rm -rf /srv"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.task.confirmation_timeout = 30);
    let ok = json!({"success": true, "data": {"exit_code": 0, "stdout": "ok", "stderr": ""}});
    let w = ScriptedWorker::start(&d.worker_client(), "sh", &["shell"], false, move |_| ok.clone());
    let c = d.client();
    let body = json!({"mode": "task", "type": "shell", "target": "sh", "instruction": "x",
        "credentials": {"username": "bob", "password": pw}, "options": {"approval": "human"}});
    let id = create_session(&c, body);
    let asked = |path: &str| {
        wait_until(Duration::from_secs(20), path, || {
            let s = c.get(&format!("/sessions/{id}")).json();
            s[path].is_object().then_some(s)
        })
    };
    asked("question_pending");
    let answer = json!({"text": format!("it is {pw}, {hex} or {}", hex.to_lowercase())});
    assert_eq!(c.post(&format!("/sessions/{id}/answer"), &answer).status, 200);
    let pending = asked("confirmation_pending")["confirmation_pending"]["confirmation_id"].clone();
    let edit = json!({"confirmation_id": pending, "approved": true, "edited_command": format!("login {pw} {shifted}")});
    assert_eq!(c.post(&format!("/sessions/{id}/confirmation"), &edit).status, 200);
    let pending = wait_until(Duration::from_secs(20), "the second confirmation", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        let p = s["confirmation_pending"]["confirmation_id"].clone();
        (p.is_string() && p != pending).then_some(p)
    });
    let deny = json!({"confirmation_id": pending, "approved": false, "reason": format!("not with Basic {basic}")});
    assert_eq!(c.post(&format!("/sessions/{id}/confirmation"), &deny).status, 200);
    wait_status(&c, &id, "finished");
    let sent: Vec<String> = w.seen.lock().unwrap().iter().map(|c| c["params"]["command"].to_string()).collect();
    assert!(sent.iter().any(|c| c.contains(&format!("login {pw}"))), "the edit runs as typed: {sent:?}");
    let to_model: String = llm.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(to_model.contains("[redacted]") && to_model.contains("edited command instead"), "{to_model}");
    let on_disk = std::fs::read_to_string(dir.path().join(&id).join("log.jsonl")).unwrap()
        + &std::fs::read_to_string(dir.path().join(&id).join("conversation.jsonl")).unwrap();
    let middle = &shifted[4..shifted.len() - 4];
    for leak in [pw, &hex, &hex.to_lowercase(), basic.trim_end_matches('='), middle] {
        assert!(!to_model.contains(leak), "{leak} reached the model: {to_model}");
        assert!(!on_disk.contains(leak), "{leak} reached the disk");
    }
}

//! The worker protocol: registration (seed shape too), long poll, results, leases,
//! disconnects, auth.

use crate::support::*;
use agent_controller::exec::ExecError;
use agent_controller::session::AgentOutcome;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn seed_shaped_worker_runs_commands_unchanged() {
    let dir = TempDir::new("seedworker");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    // The seed's register body, and its reply shape.
    let r = d
        .worker_client()
        .post("/register", &json!({"hostname": "OFFICE-PC-01", "has_pywinauto": false, "has_playwright": true}));
    let v = r.json();
    assert_eq!(v["success"], true);
    assert_eq!(v["message"], "registered");
    assert_eq!(v["config"]["browser"]["viewport_width"], 1280);
    assert_eq!(v["config"]["click_delay"], 1.0);
    let w = ScriptedWorker::start(
        &d.worker_client(),
        "OFFICE-PC-01",
        &[],
        true,
        |cmd| json!({"success": true, "data": {"echo": cmd["params"].clone(), "action": cmd["action"].clone()}}),
    );
    let workers = c.get("/workers").json();
    assert_eq!(workers.as_array().unwrap().len(), 1, "re-registering the same hostname resumes: {workers}");
    assert_eq!(workers[0]["hostname"], "OFFICE-PC-01");
    assert_eq!(workers[0]["capabilities"], json!(["browser"]));
    assert_eq!(workers[0]["connected"], true);

    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "go"}));
    let (runner, done) = test_agent.next();
    assert_eq!(runner.session_id(), id);
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!(s["status"], "running");
    assert_eq!(s["worker"], "OFFICE-PC-01");
    assert_eq!(c.get("/workers").json()[0]["session_id"], id.as_str());

    let out = runner.execute("browser_navigate", json!({"url": "https://x.test/a"}), Duration::from_secs(10)).unwrap();
    assert_eq!(out, json!({"echo": {"url": "https://x.test/a"}, "action": "browser_navigate"}));
    let seen = w.seen.lock().unwrap().clone();
    assert_eq!(seen[0]["session_id"], id.as_str());
    assert!(seen[0]["id"].as_str().unwrap().starts_with("cmd_"));
    done.send(AgentOutcome::Finished { summary: "ok".into() }).unwrap();
    wait_status(&c, &id, "finished");
    // The lease ends with the session.
    wait_until(Duration::from_secs(5), "lease released", || {
        c.get("/workers").json()[0]["session_id"].is_null().then_some(())
    });
}

#[test]
fn worker_failure_and_unknown_result_ids() {
    let dir = TempDir::new("workerfail");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let w = ScriptedWorker::start(&d.worker_client(), "sh1", &["shell"], false, |cmd| {
        if cmd["action"] == "run_command" {
            json!({"success": false, "error": "no element matches `#buy`"})
        } else {
            json!({"success": true})
        }
    });
    let id = create_session(&d.client(), json!({"mode": "task", "type": "shell", "target": "box", "instruction": "x"}));
    let (runner, done) = test_agent.next();
    let err = runner.execute("run_command", json!({"command": "ls"}), Duration::from_secs(10)).unwrap_err();
    assert!(matches!(&err, ExecError::Failed(m) if m == "no element matches `#buy`"), "{err:?}");
    // A stray result is acknowledged but ignored.
    let r = w.client.post(&format!("/result?worker_id={}", w.worker_id), &json!({"id": "cmd_9999", "success": true}));
    assert_eq!(r.status, 200);
    assert!(r.json()["ignored"].is_string());
    // Malformed results are 400s with the JSON error shape.
    let result = format!("/result?worker_id={}", w.worker_id);
    assert_error(&w.client.post_raw(&result, "application/json", b"{\"id\":"), 400, "bad_request");
    done.send(AgentOutcome::Failed("gave up".into())).unwrap();
    let s = wait_status(&d.client(), &id, "error");
    assert_eq!(s["error"], "gave up");
}

/// A raw long poll: send the request, return when the response head arrives.
fn raw_poll(addr: &str, worker_id: &str, w: &Client) -> (Value, Instant) {
    let secret = w.secret.clone().unwrap_or_default();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    write!(
        s,
        "GET /command?worker_id={worker_id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let arrived = Instant::now();
    let mut len = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    (serde_json::from_slice(&body).unwrap(), arrived)
}

#[test]
fn command_reaches_a_parked_poll_at_once() {
    let dir = TempDir::new("latency");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let (worker_id, wc) = register_as(&d.worker_client(), json!({"hostname": "fast", "capabilities": ["browser"]}));
    let addr = d.worker.trim_start_matches("http://").to_string();
    let id = create_session(&d.client(), json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, _done) = test_agent.next();
    let mut latencies = Vec::new();
    for i in 0..30 {
        let (a, w, wc2) = (addr.clone(), worker_id.clone(), wc.clone());
        let poller = std::thread::spawn(move || raw_poll(&a, &w, &wc2));
        // Let the poll park first.
        std::thread::sleep(Duration::from_millis(30));
        let r = runner.clone();
        let sender = std::thread::spawn(move || {
            let t0 = Instant::now();
            let res = r.execute("browser_get_page_info", json!({"i": i}), Duration::from_secs(10));
            (t0, res)
        });
        let (cmd, arrived) = poller.join().unwrap();
        assert_eq!(cmd["params"]["i"], i);
        assert_eq!(cmd["session_id"], id.as_str());
        // Answer so the sender returns.
        let r = wc.post(
            &format!("/result?worker_id={worker_id}"),
            &json!({"id": cmd["id"], "success": true, "data": {"i": i}}),
        );
        assert_eq!(r.status, 200);
        let (t0, res) = sender.join().unwrap();
        assert_eq!(res.unwrap(), json!({"i": i}));
        latencies.push(arrived.saturating_duration_since(t0));
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    eprintln!("command delivery to a parked poll: median {median:?}, max {:?}", latencies.last().unwrap());
    // At once: handed to the parked poll, not picked up by a later poll or a timer (which
    // would take tens of milliseconds at least). A debug build on a machine slow to wake
    // threads takes 0.5–1 ms here (0.15 ms on a faster one), so the bound leaves room; the
    // release figure against its bar (p50 ≤ 0.25 ms) is `make bench`'s round trip.
    assert!(median < Duration::from_millis(3), "median delivery {median:?}");
}

#[test]
fn silent_worker_is_disconnected_and_its_waiting_command_fails() {
    let dir = TempDir::new("disconnect");
    let mut config = test_config(dir.path());
    // Long enough for the lease to happen before the ghost is disconnected, on a slow disk too.
    config.server.worker_timeout_s = 3;
    config.server.long_poll_s = 2;
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(config, agent);
    let c = d.client();
    // Registers, never polls.
    let (worker_id, wc) = register_as(&d.worker_client(), json!({"hostname": "ghost", "capabilities": ["browser"]}));
    let _id = create_session(&c, json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, _done) = test_agent.next();
    let t = Instant::now();
    let err = runner.execute("browser_screenshot", json!({}), Duration::from_secs(30)).unwrap_err();
    let waited = t.elapsed();
    match &err {
        ExecError::Disconnected(msg) => assert!(msg.contains("ghost") && msg.contains("disconnected"), "{msg}"),
        other => panic!("expected a disconnect, got {other:?}"),
    }
    assert!(waited < Duration::from_secs(8), "failed after {waited:?}, not at once");
    let workers = c.get("/workers").json();
    assert_eq!(workers[0]["connected"], false);
    assert_eq!(c.get("/health").json()["workers"], 0);
    // While disconnected, a command fails at once with a clear message.
    let t = Instant::now();
    let err = runner.execute("browser_screenshot", json!({}), Duration::from_secs(30)).unwrap_err();
    assert!(t.elapsed() < AT_ONCE);
    assert!(err.to_string().contains("disconnected"), "{err}");
    // Polling again reconnects it; the next command goes through.
    let addr = d.worker.trim_start_matches("http://").to_string();
    let (w, wc2) = (worker_id.clone(), wc.clone());
    let poller = std::thread::spawn(move || raw_poll(&addr, &w, &wc2));
    wait_until(Duration::from_secs(5), "reconnect", || {
        (c.get("/workers").json()[0]["connected"] == true).then_some(())
    });
    let r = runner.clone();
    let sender = std::thread::spawn(move || r.execute("browser_back", json!({}), Duration::from_secs(10)));
    let (cmd, _) = poller.join().unwrap();
    let reply =
        wc.post(&format!("/result?worker_id={worker_id}"), &json!({"id": cmd["id"], "success": true, "data": "ok"}));
    assert_eq!(reply.status, 200);
    assert_eq!(sender.join().unwrap().unwrap(), json!("ok"));
}

#[test]
fn sessions_wait_for_a_capable_free_worker() {
    let dir = TempDir::new("lease");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    let _shell = ScriptedWorker::start(&d.worker_client(), "shellbox", &["shell"], false, |_| json!({"success": true}));
    // A browser session cannot use a shell worker: it waits.
    let a = create_session(&c, json!({"mode": "explore", "target": "https://a.test"}));
    // The session thread logs this just before it queues for a worker: `a` queues before `b`.
    wait_until(Duration::from_secs(10), "a queued", || {
        c.get(&format!("/sessions/{a}/log")).text().contains("waiting for a worker").then_some(())
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.get(&format!("/sessions/{a}")).json()["status"], "waiting");
    let b = create_session(&c, json!({"mode": "explore", "target": "https://b.test"}));
    // One browser worker arrives: the first session gets it, the second keeps waiting.
    let _browser =
        ScriptedWorker::start(&d.worker_client(), "chromebox", &["browser"], false, |_| json!({"success": true}));
    let (runner_a, done_a) = test_agent.next();
    assert_eq!(runner_a.session_id(), a);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.get(&format!("/sessions/{b}")).json()["status"], "waiting");
    // When the first ends, the second gets the worker.
    done_a.send(AgentOutcome::Finished { summary: "a".into() }).unwrap();
    let (runner_b, done_b) = test_agent.next();
    assert_eq!(runner_b.session_id(), b);
    assert_eq!(runner_b.worker_hostname(), "chromebox");
    // Naming a worker that cannot do the job is refused up front.
    assert_error(
        &c.post("/sessions", &json!({"mode": "explore", "target": "https://c.test", "worker": "shellbox"})),
        400,
        "bad_request",
    );
    // Stopping a waiting session ends it at once.
    let w = create_session(&c, json!({"mode": "explore", "target": "https://d.test", "worker": "chromebox"}));
    assert_eq!(c.delete(&format!("/sessions/{w}")).json()["status"], "stopped");
    wait_status(&c, &w, "stopped");
    done_b.send(AgentOutcome::Stopped).unwrap();
}

#[test]
fn stop_wakes_a_command_wait_at_once() {
    let dir = TempDir::new("stopcmd");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    // A worker that takes commands and never answers.
    let _w = register(&d.worker_client(), json!({"hostname": "slow", "capabilities": ["browser"]}));
    let id = create_session(&d.client(), json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, _done) = test_agent.next();
    let r = runner.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        (r.execute("browser_wait_for", json!({}), Duration::from_secs(60)), t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    assert_eq!(d.client().delete(&format!("/sessions/{id}")).status, 200);
    let (res, _) = waiter.join().unwrap();
    assert!(matches!(res, Err(ExecError::Stopped)), "{res:?}");
    assert!(t.elapsed() < AT_ONCE, "woke after {:?}", t.elapsed());
    wait_status(&d.client(), &id, "stopped");
}

#[test]
fn worker_auth_is_separate_from_api_auth() {
    let dir = TempDir::new("workerauth");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("api-token-123");
    config.server.worker_token = agent_controller::util::secret::Secret::new("worker-token-456");
    let d = TestDaemon::idle(config);
    let w = d.worker_client();
    let body = json!({"hostname": "h", "capabilities": ["browser"]});
    assert_error(&w.with_token(None).post("/register", &body), 401, "unauthorized");
    assert_error(&w.with_token(Some("api-token-123")).post("/register", &body), 401, "unauthorized");
    assert_error(&w.with_token(None).get("/command"), 401, "unauthorized");
    assert_error(&w.with_token(None).post("/result", &json!({})), 401, "unauthorized");
    assert_error(&w.with_token(None).post_raw("/upload", "multipart/form-data; boundary=x", b""), 401, "unauthorized");
    assert_eq!(w.with_token(None).get("/health").json(), json!({"status": "ok"}));
    assert_eq!(w.post("/register", &body).status, 200);
    // The worker token does not open the API.
    assert_error(&d.client().with_token(Some("worker-token-456")).get("/sessions"), 401, "unauthorized");
    // Unknown worker ids are told to register.
    assert_error(&w.get("/command?worker_id=wkr_9999"), 404, "not_found");
    assert_error(&w.post("/register", &json!({"hostname": ""})), 400, "bad_request");
    assert_error(&w.post("/register", &json!({"nohost": 1})), 400, "bad_request");
    // Found by tests/fuzz: a control character at either end passed the check (made on the
    // trimmed name) and reached the log and /workers as it was.
    assert_error(&w.post("/register", &json!({"hostname": "\nbox"})), 400, "bad_request");
    assert_error(&w.post("/register", &json!({"hostname": "box\t"})), 400, "bad_request");
}

#[test]
fn poll_times_out_with_wait() {
    let dir = TempDir::new("pollwait");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    let d = TestDaemon::idle(config);
    let (id, wc) = register_as(&d.worker_client(), json!({"hostname": "p", "capabilities": ["browser"]}));
    let t = Instant::now();
    let r = wc.get(&format!("/command?worker_id={id}"));
    assert_eq!(r.json(), json!({"action": "wait"}));
    assert!(t.elapsed() >= Duration::from_millis(900) && t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn a_worker_that_restarts_mid_command_fails_it_at_once() {
    let dir = TempDir::new("restartmid");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let (worker_id, wc) = register_as(&d.worker_client(), json!({"hostname": "flaky", "capabilities": ["browser"]}));
    let _id = create_session(&d.client(), json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, _done) = test_agent.next();
    let r = runner.clone();
    let sender = std::thread::spawn(move || {
        r.execute("browser_navigate", json!({"url": "https://x.test"}), Duration::from_secs(60))
    });
    // The worker takes the command…
    let addr = d.worker.trim_start_matches("http://").to_string();
    let (cmd, _) = raw_poll(&addr, &worker_id, &wc);
    assert_eq!(cmd["action"], "browser_navigate");
    // …then crashes and registers again: the command fails now, not after 60 s.
    let t = Instant::now();
    let (again, wc) = register_as(&d.worker_client(), json!({"hostname": "flaky", "capabilities": ["browser"]}));
    assert_eq!(again, worker_id, "a bare worker resumes its id");
    let err = sender.join().unwrap().unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(err.to_string().contains("restarted"), "{err}");
    // The same happens when it simply polls again without a result.
    let r = runner.clone();
    let sender = std::thread::spawn(move || r.execute("browser_back", json!({}), Duration::from_secs(60)));
    let (cmd, _) = raw_poll(&addr, &worker_id, &wc);
    assert_eq!(cmd["action"], "browser_back");
    let a2 = addr.clone();
    let w2 = worker_id.clone();
    let _next_poll = std::thread::spawn(move || raw_poll(&a2, &w2, &wc));
    let err = sender.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("asked for new work"), "{err}");
}

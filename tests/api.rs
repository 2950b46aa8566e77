//! The API server's routes, error shapes and auth.

use crate::support::*;
use serde_json::json;

#[test]
fn health_and_empty_lists() {
    let dir = TempDir::new("health");
    let d = TestDaemon::idle(test_config(dir.path()));
    let c = d.client();
    let h = c.get("/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-type"), Some("application/json"));
    let v = h.json();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["workers"], 0);
    assert_eq!(c.get("/sessions").json(), json!([]));
    assert_eq!(c.get("/workers").json(), json!([]));
}

#[test]
fn create_session_shapes_and_defaults() {
    let dir = TempDir::new("create");
    let d = TestDaemon::idle(test_config(dir.path()));
    let c = d.client();
    let r = c.post(
        "/sessions",
        &json!({"mode": "task", "target": "https://example.test/", "instruction": "Download all PDFs"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    let id = v["session_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("sess_") && id.len() == "sess_20261122_143022".len(), "{id}");
    assert_eq!(v["status"], "waiting");
    assert_eq!(v["type"], "browser");
    assert_eq!(v["max_turns"], 200);
    assert_eq!(v["options"], json!({"max_turns": 200, "auto_confirm": false}));
    assert_eq!(v["confirmation_pending"], json!(null));
    assert_eq!(v["usage"]["input_tokens"], 0);

    // A second one in the same second gets a suffix; explore on a window title is an app session.
    let id2 = create_session(
        &c,
        json!({"mode": "explore", "target": "Calculator", "goal": "map the UI", "options": {"max_turns": 7}}),
    );
    assert_ne!(id, id2);
    let s2 = c.get(&format!("/sessions/{id2}")).json();
    assert_eq!(s2["type"], "app");
    assert_eq!(s2["max_turns"], 7);
    assert_eq!(s2["goal"], "map the UI");

    let list = c.get("/sessions").json();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["session_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] >= ids[1], "newest first: {ids:?}");
    for s in list.as_array().unwrap() {
        for key in ["session_id", "status", "mode", "type", "target", "created_at", "turn"] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
    }
    let health = c.get("/health").json();
    assert_eq!(health["sessions"]["waiting"], 2);

    // Files, notes, report, confirmation, log of a fresh session.
    assert_eq!(c.get(&format!("/sessions/{id}/files")).json(), json!([]));
    assert_eq!(c.get(&format!("/sessions/{id}/notes")).json(), json!([]));
    assert_eq!(c.get(&format!("/sessions/{id}/report")).json(), json!({"report": ""}));
    assert_eq!(c.get(&format!("/sessions/{id}/confirmation")).json(), json!({"pending": false}));
    let log = c.get(&format!("/sessions/{id}/log")).json();
    assert_eq!(log["entries"][0]["seq"], 1);
    assert_eq!(log["entries"][0]["type"], "system");
    assert!(log["next"].as_u64().unwrap() >= 1);

    // Stop it: 200, then idempotent; the session is stopped on disk too.
    let r = c.delete(&format!("/sessions/{id}"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"stopped": true, "status": "stopped"}));
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(&id).join("session.json")).unwrap()).unwrap();
    assert_eq!(on_disk["status"], "stopped");
}

#[test]
fn bad_input_gets_json_errors() {
    let dir = TempDir::new("badinput");
    let d = TestDaemon::idle(test_config(dir.path()));
    let c = d.client();
    let cases: Vec<(&[u8], &str)> = vec![
        (b"{not json", "invalid JSON"),
        (b"", "empty"),
        (br#"{"mode":"task","target":"https://x.test"}"#, "instruction"),
        (br#"{"mode":"fly","target":"x"}"#, "unknown variant"),
        (br#"{"target":"x"}"#, "mode"),
        (br#"{"mode":"explore","target":"   "}"#, "target"),
        (br#"{"mode":"explore","target":"x","instuction":"typo"}"#, "instuction"),
        (br#"{"mode":"explore","target":"x","options":{"max_turns":0}}"#, "max_turns"),
        (br#"{"mode":"explore","target":"x","worker":"nobody"}"#, "nobody"),
        (br#"{"mode":"explore","target":"x","credentials":{"username":"u"}}"#, "password"),
        (br#"{"mode":"explore","target":"x","notifications":{"webhook":{"url":"ftp://x"}}}"#, "webhook"),
        (br#"[1,2]"#, "invalid"),
        // serde reads a struct from a list of its fields in order: not here.
        (
            br#"{"mode":"explore","target":"x","options":{"budget":[5,2.5,9]}}"#,
            "`options.budget` must be a JSON object",
        ),
        (br#"["explore","x"]"#, "the body must be a JSON object"),
        (br#"{"mode":"explore","target":"x","credentials":["u","longpassword"]}"#, "`credentials` must be"),
    ];
    for (body, needle) in cases {
        let r = c.post_raw("/sessions", "application/json", body);
        assert_error(&r, 400, "bad_request");
        let msg = r.json()["error"].as_str().unwrap().to_string();
        assert!(msg.contains(needle), "{:?} -> {msg}", String::from_utf8_lossy(body));
    }
    // Oversized body.
    let big = format!(r#"{{"mode":"explore","target":"x","goal":"{}"}}"#, "a".repeat(1024 * 1024 + 10));
    assert_error(&c.post_raw("/sessions", "application/json", big.as_bytes()), 413, "too_large");
    // Unknown session on every per-session route.
    for path in ["", "/log", "/report", "/notes", "/files", "/files/zip", "/files/a.txt", "/confirmation"] {
        assert_error(&c.get(&format!("/sessions/sess_19990101_000000{path}")), 404, "not_found");
    }
    assert_error(&c.delete("/sessions/nope"), 404, "not_found");
    assert_error(
        &c.post("/sessions/nope/confirmation", &json!({"confirmation_id": "conf_001", "approved": true})),
        404,
        "not_found",
    );
    // Unknown route and wrong method.
    assert_error(&c.get("/nowhere"), 404, "not_found");
    assert_error(&c.request("PUT", "/sessions", None, None), 405, "method_not_allowed");
    // Bad query values.
    let id = create_session(&c, json!({"mode": "explore", "target": "x"}));
    assert_error(&c.get(&format!("/sessions/{id}/log?after=-1")), 400, "bad_request");
    assert_error(&c.get(&format!("/sessions/{id}/log?wait=soon")), 400, "bad_request");
    // No confirmation pending: 409; malformed answer: 400.
    assert_error(
        &c.post(&format!("/sessions/{id}/confirmation"), &json!({"confirmation_id": "conf_001", "approved": true})),
        409,
        "conflict",
    );
    assert_error(&c.post(&format!("/sessions/{id}/confirmation"), &json!({"approved": "yes"})), 400, "bad_request");
    // Stopping an ended session that did not stop: 409 is covered in confirmations; here the
    // daemon is still healthy after all of it.
    assert_eq!(c.get("/health").status, 200);
}

#[test]
fn api_auth_is_bearer_and_health_stays_open() {
    let dir = TempDir::new("auth");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("s3cret-api-token");
    let d = TestDaemon::idle(config);
    let authed = d.client();
    let anon = authed.with_token(None);
    let wrong = authed.with_token(Some("s3cret-api-tokeX"));
    assert_eq!(anon.get("/health").status, 200);
    for path in ["/sessions", "/workers", "/sessions/sess_x", "/sessions/sess_x/files/zip"] {
        let r = anon.get(path);
        assert_error(&r, 401, "unauthorized");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_error(&wrong.get(path), 401, "unauthorized");
    }
    assert_error(&anon.post("/sessions", &json!({"mode": "explore", "target": "x"})), 401, "unauthorized");
    assert_eq!(authed.get("/sessions").status, 200);
    // The worker server does not accept the API token's absence as anything special: it has
    // its own (empty here) token.
    assert_eq!(d.worker_client().get("/health").status, 200);
}

#[test]
fn log_long_poll_wakes_on_new_entries() {
    let dir = TempDir::new("logwait");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let c = d.client();
    let _w = ScriptedWorker::start(&d.worker_client(), "logbox", &["browser"], false, |_| json!({"success": true}));
    let id = create_session(&c, json!({"mode": "explore", "target": "https://x.test"}));
    let (runner, done) = test_agent.next();
    let next = c.get(&format!("/sessions/{id}/log")).json()["next"].as_u64().unwrap();
    let c2 = c.clone();
    let path = format!("/sessions/{id}/log?after={next}&wait=20");
    let waiter = std::thread::spawn(move || {
        let t = std::time::Instant::now();
        (c2.get(&path).json(), t.elapsed())
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    runner.log(agent_controller::protocol::LogKind::Assistant, "hello from the agent", Some(json!({"k": 1})));
    let (page, elapsed) = waiter.join().unwrap();
    assert!(elapsed < std::time::Duration::from_secs(5), "woke after {elapsed:?}");
    assert_eq!(page["entries"][0]["text"], "hello from the agent");
    assert_eq!(page["entries"][0]["type"], "assistant");
    assert_eq!(page["entries"][0]["data"], json!({"k": 1}));
    assert_eq!(page["entries"][0]["seq"], next + 1);
    assert_eq!(page["next"], next + 1);
    // A wait with nothing new times out with an empty page.
    let t = std::time::Instant::now();
    let empty = c.get(&format!("/sessions/{id}/log?after={}&wait=1", next + 1)).json();
    assert!(t.elapsed() >= std::time::Duration::from_millis(900));
    assert_eq!(empty, json!({"entries": [], "next": next + 1}));
    done.send(agent_controller::session::AgentOutcome::Finished { summary: "done".into() }).unwrap();
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "done");
    assert!(s["finished_at"].is_string());
}

/// A raw request with a lying Content-Length and no body: answered 413, daemon alive.
fn lying_length(addr: &str, path: &str, length: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while !String::from_utf8_lossy(&got).contains("\"code\"") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn absurd_content_length_is_refused_without_killing_the_daemon() {
    let dir = TempDir::new("absurd");
    let d = TestDaemon::idle(test_config(dir.path()));
    for length in ["18446744073709551615", "9000000000000000000", "99999999999"] {
        let head = lying_length(d.api.trim_start_matches("http://"), "/sessions", length);
        assert!(head.starts_with("HTTP/1.1 413"), "{head}");
        assert!(head.contains("too_large"), "{head}");
        let head = lying_length(d.worker.trim_start_matches("http://"), "/upload", length);
        assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    }
    assert_eq!(d.client().get("/health").status, 200);
    assert_eq!(d.worker_client().get("/health").status, 200);
}

#[test]
fn json_errors_do_not_echo_values() {
    let dir = TempDir::new("noecho");
    let d = TestDaemon::idle(test_config(dir.path()));
    let r = d.client().post(
        "/sessions",
        &json!({"mode": "explore", "target": "x", "notifications": {"webhook": "https://hooks.test/x?token=ECHO-SECRET"}}),
    );
    assert_error(&r, 400, "bad_request");
    assert!(!r.text().contains("ECHO-SECRET"), "{}", r.text());
    assert!(r.text().contains("expected"), "{}", r.text());
}

/// A raw request with the given extra header lines; returns the status line and body.
fn raw_with_headers(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn tokenless_servers_refuse_what_only_a_browser_page_sends() {
    let dir = TempDir::new("browserguard");
    let d = TestDaemon::idle(test_config(dir.path()));
    let api = d.api.trim_start_matches("http://").to_string();
    let worker = d.worker.trim_start_matches("http://").to_string();
    let create = r#"{"mode":"explore","target":"https://x.test"}"#;
    // A page on another site (a no-cors POST with a text/plain body): refused, nothing created.
    let r = raw_with_headers(
        &api,
        "POST",
        "/sessions",
        &format!("Host: {api}\r\nOrigin: https://evil.test\r\nContent-Type: text/plain\r\n"),
        create,
    );
    assert!(r.starts_with("HTTP/1.1 403") && r.contains("forbidden") && r.contains("cross-site"), "{r}");
    // DNS rebinding: the page's own name, resolved to 127.0.0.1.
    let r = raw_with_headers(&api, "GET", "/sessions", "Host: evil.test:5900\r\n", "");
    assert!(r.starts_with("HTTP/1.1 403") && r.contains("DNS rebinding"), "{r}");
    let r = raw_with_headers(&worker, "POST", "/register", "Host: evil.test\r\n", r#"{"hostname":"x"}"#);
    assert!(r.starts_with("HTTP/1.1 403"), "the worker server too: {r}");
    // And the worker's step routes.
    let headers = format!("Host: {worker}\r\nOrigin: https://evil.test\r\n");
    let r = raw_with_headers(&worker, "POST", "/heartbeat", &headers, "");
    assert!(r.starts_with("HTTP/1.1 403") && r.contains("cross-site"), "the heartbeat too: {r}");
    assert_eq!(d.client().get("/sessions").json(), json!([]));
    assert_eq!(d.client().get("/workers").json(), json!([]));
    // What clients send is fine: IP or localhost Host, no Origin or our own.
    for headers in
        [format!("Host: {api}\r\n"), "Host: localhost\r\n".into(), format!("Host: {api}\r\nOrigin: http://{api}\r\n")]
    {
        let r = raw_with_headers(&api, "GET", "/sessions", &headers, "");
        assert!(r.starts_with("HTTP/1.1 200"), "{headers:?}: {r}");
    }
    // With a token the check is the token's: a page cannot attach it.
    let dir = TempDir::new("browserguard-token");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("api-tok");
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("http://").to_string();
    let r = raw_with_headers(&api, "GET", "/sessions", "Host: evil.test\r\nOrigin: https://evil.test\r\n", "");
    assert!(r.starts_with("HTTP/1.1 401"), "{r}");
    let r = raw_with_headers(
        &api,
        "GET",
        "/sessions",
        "Host: controller.example\r\nOrigin: https://ui.example\r\nAuthorization: Bearer api-tok\r\n",
        "",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn clients_that_declare_a_body_and_never_send_it_cannot_freeze_the_servers() {
    use std::io::{BufRead, BufReader, Write};
    let dir = TempDir::new("stalled");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("api-tok");
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("http://").to_string();
    let worker = d.worker.trim_start_matches("http://").to_string();
    // More stalled connections than either server has handler threads (8 by default).
    let mut held = Vec::new();
    for i in 0..24 {
        let (addr, head) = match i % 3 {
            0 => (&api, "GET /health HTTP/1.1"),
            1 => (&api, "POST /sessions HTTP/1.1"), // no token: refused before reading
            _ => (&worker, "GET /health HTTP/1.1"),
        };
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        write!(s, "{head}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            .unwrap();
        // A body on GET is refused at once; a POST's head is held back until its body comes.
        if i % 3 != 1 {
            let mut status = String::new();
            BufReader::new(&s).read_line(&mut status).unwrap();
            assert!(status.starts_with("HTTP/1.1 400"), "answered at once: {status:?}");
        }
        held.push(s); // open, the declared body never comes
    }
    let t = std::time::Instant::now();
    assert_eq!(d.client().get("/health").status, 200);
    assert_eq!(d.worker_client().get("/health").status, 200);
    assert!(t.elapsed() < AT_ONCE, "{:?}", t.elapsed());
}

/// A chunked body refused before its end (too large): the client gets the 413, not a closed
/// connection, and the daemon reads off the rest so the answer is not lost to a reset.
#[test]
fn a_chunked_body_refused_early_still_gets_its_answer() {
    use std::io::{Read, Write};
    let dir = TempDir::new("early");
    let d = TestDaemon::idle(test_config(dir.path()));
    let mut s = std::net::TcpStream::connect(d.api.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let head = "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b'a'; 64 << 10];
    // 4 MiB, far past the 1 MiB a JSON body may have; the daemon may stop reading partway.
    for _ in 0..64 {
        let sent =
            write!(s, "{:x}\r\n", chunk.len()).and_then(|()| s.write_all(&chunk)).and_then(|()| s.write_all(b"\r\n"));
        if sent.is_err() {
            break;
        }
    }
    let _ = s.write_all(b"0\r\n\r\n");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text:?}");
    assert!(text.contains("too_large"), "{text}");
    assert_eq!(d.client().get("/health").status, 200);
}

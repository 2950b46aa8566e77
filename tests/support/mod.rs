//! Test support: the real daemon on port 0 in-process, an HTTP client, scripted workers, a
//! test-driven agent, temp dirs, and the built binary for signal and config tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod browser;
pub mod desktop;
pub mod llm;
pub mod site;
pub mod sshd;
pub mod wire;
pub mod worker;

use agent_controller::config::Config;
use agent_controller::daemon::Daemon;
use agent_controller::session::AgentFn;
use agent_controller::session::{AgentOutcome, SessionRunner};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ac-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn test_config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.server.api_port = 0;
    c.server.worker_port = 0;
    c.output.dir = dir.to_path_buf();
    c
}

/// The daemon running in this process; shut down on drop.
pub struct TestDaemon {
    pub daemon: Option<Daemon>,
    pub api: String,
    pub worker: String,
    pub api_token: Option<String>,
    pub worker_token: Option<String>,
}

impl TestDaemon {
    pub fn start(config: Config, agent: AgentFn) -> TestDaemon {
        let api_token = Some(config.server.api_token.expose().to_string()).filter(|t| !t.is_empty());
        let worker_token = Some(config.server.worker_token.expose().to_string()).filter(|t| !t.is_empty());
        let scheme = config.scheme();
        let daemon = Daemon::start(config, agent).expect("daemon starts");
        TestDaemon {
            api: format!("{scheme}://{}", daemon.api_addr()),
            worker: format!("{scheme}://{}", daemon.worker_addr()),
            daemon: Some(daemon),
            api_token,
            worker_token,
        }
    }

    pub fn idle(config: Config) -> TestDaemon {
        TestDaemon::start(config, Arc::new(agent_controller::session::runner::idle_agent))
    }

    pub fn client(&self) -> Client {
        Client::new(self.api.clone(), self.api_token.clone())
    }

    pub fn worker_client(&self) -> Client {
        Client::new(self.worker.clone(), self.worker_token.clone())
    }

    pub fn shutdown(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown();
        }
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The private CA that signs every TLS test's server certificate (`tests/tls.rs`), as DER;
/// every test client trusts it (and nothing else, which plain-HTTP tests never notice).
pub static TEST_CA: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

pub fn agent() -> ureq::Agent {
    let mut config =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(60)));
    if let Some(der) = TEST_CA.get() {
        let ca = ureq::tls::Certificate::from_der(der).to_owned();
        let roots = ureq::tls::RootCerts::new_with_certs(&[ca]);
        config = config.tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build());
    }
    config.build().into()
}

/// A JSON client for one server.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub token: Option<String>,
    /// A worker's secret, sent as `X-Worker-Secret`.
    pub secret: Option<String>,
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Client {
    pub fn new(base: String, token: Option<String>) -> Client {
        Client { base, token, secret: None }
    }

    pub fn with_token(&self, token: Option<&str>) -> Client {
        Client { base: self.base.clone(), token: token.map(str::to_string), secret: self.secret.clone() }
    }

    /// This client speaking as the worker holding `secret`.
    pub fn with_secret(&self, secret: &str) -> Client {
        Client { base: self.base.clone(), token: self.token.clone(), secret: Some(secret.to_string()) }
    }

    pub fn request(&self, method: &str, path: &str, content_type: Option<&str>, body: Option<Vec<u8>>) -> Reply {
        let url = format!("{}{}", self.base, path);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(t) = &self.token {
            builder = builder.header("Authorization", format!("Bearer {t}"));
        }
        if let Some(s) = &self.secret {
            builder = builder.header("X-Worker-Secret", s);
        }
        if let Some(ct) = content_type {
            builder = builder.header("Content-Type", ct);
        }
        let agent = agent();
        let result = match body {
            Some(b) => agent.run(builder.body(b).unwrap()),
            None => agent.run(builder.body(()).unwrap()),
        };
        let mut resp = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status().as_u16();
        let headers =
            resp.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
        let body = resp.body_mut().with_config().limit(1 << 34).read_to_vec().unwrap();
        Reply { status, headers, body }
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, None)
    }
    pub fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None, None)
    }
    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, Some("application/json"), Some(serde_json::to_vec(body).unwrap()))
    }
    pub fn post_raw(&self, path: &str, content_type: &str, body: &[u8]) -> Reply {
        self.request("POST", path, Some(content_type), Some(body.to_vec()))
    }
}

/// Assert the standard error shape and return the code.
pub fn assert_error(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "body: {}", reply.text());
    let v = reply.json();
    assert_eq!(v["code"], code, "body: {v}");
    assert!(v["error"].as_str().is_some_and(|s| !s.is_empty()), "error message missing: {v}");
}

/// The bound for "at once" (a stop waking a wait): far below the 30–300 s waits it guards
/// against, and above the fsync stalls of a loaded CI disk.
pub const AT_ONCE: Duration = Duration::from_secs(3);

/// Poll `f` until it returns Some, or panic after `timeout`.
pub fn wait_until<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn wait_status(client: &Client, id: &str, status: &str) -> Value {
    wait_until(Duration::from_secs(10), &format!("{id} to be {status}"), || {
        let s = client.get(&format!("/sessions/{id}")).json();
        (s["status"] == status).then_some(s)
    })
}

pub fn create_session(client: &Client, body: Value) -> String {
    let r = client.post("/sessions", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["session_id"].as_str().unwrap().to_string()
}

// ----- workers --------------------------------------------------------------------------------

/// Register a worker with the given body; returns its worker_id.
pub fn register(worker: &Client, body: Value) -> String {
    register_as(worker, body).0
}

/// Register a worker with the given body; returns its worker_id and a client carrying its
/// secret (every request naming the worker_id needs it).
pub fn register_as(worker: &Client, body: Value) -> (String, Client) {
    let r = worker.post("/register", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["success"], true);
    let secret = v["worker_secret"].as_str().unwrap();
    (v["worker_id"].as_str().unwrap().to_string(), worker.with_secret(secret))
}

/// A scripted worker on its own thread: long-polls and answers each command with `respond`.
pub struct ScriptedWorker {
    pub worker_id: String,
    /// The worker client carrying its secret.
    pub client: Client,
    pub seen: Arc<Mutex<Vec<Value>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// A one-frame 1×1 GIF with its own two-colour palette (base64).
pub const TINY_GIF: &str = "R0lGODlhAQABAAAAACH5BAgKAAAALAAAAAABAAEAgAAAAP///wICTAEAOw==";

impl ScriptedWorker {
    /// `seed_shape`: register with has_playwright and never send worker_id, as the seed did.
    pub fn start(
        worker: &Client,
        hostname: &str,
        capabilities: &[&str],
        seed_shape: bool,
        respond: impl Fn(&Value) -> Value + Send + 'static,
    ) -> ScriptedWorker {
        let body = if seed_shape {
            json!({"hostname": hostname, "has_playwright": true, "has_pywinauto": false})
        } else {
            json!({"hostname": hostname, "capabilities": capabilities, "use_secret": true})
        };
        let (worker_id, client) = register_as(worker, body);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (id, seen2, stop2) = (worker_id.clone(), Arc::clone(&seen), Arc::clone(&stop));
        let own = client.clone();
        let handle = std::thread::spawn(move || {
            let path = if seed_shape { "/command".to_string() } else { format!("/command?worker_id={id}") };
            let result_path = if seed_shape { "/result".to_string() } else { format!("/result?worker_id={id}") };
            while !stop2.load(Ordering::Acquire) {
                let r = client.get(&path);
                if r.status != 200 {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                let cmd = r.json();
                match cmd["action"].as_str() {
                    Some("wait") => continue,
                    Some("shutdown") | None => break,
                    // The recording's frames, asked after each acting step: a 1×1 GIF, as a
                    // real worker makes them, never shown to the test's handler.
                    Some("browser_recording_frame" | "recording_frame") => {
                        let frame = json!({"frame_gif_base64": TINY_GIF, "width": 1, "height": 1});
                        let result = json!({"id": cmd["id"], "success": true, "data": frame});
                        let _ = client.post(&result_path, &result);
                    }
                    Some(_) => {
                        seen2.lock().unwrap().push(cmd.clone());
                        // Who the worker is, for `upload_as_worker` (not part of the protocol).
                        let mut given = cmd.clone();
                        if !seed_shape {
                            given["_as"] = json!({"worker_id": id, "secret": client.secret});
                        }
                        let mut result = respond(&given);
                        result["id"] = cmd["id"].clone();
                        let r = client.post(&result_path, &result);
                        assert_eq!(r.status, 200, "{}", r.text());
                    }
                }
            }
        });
        ScriptedWorker { worker_id, client: own, seen, stop, handle: Some(handle) }
    }
}

impl Drop for ScriptedWorker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // The thread ends at its next poll answer (at most long_poll_s) or at daemon shutdown.
        if let Some(h) = self.handle.take() {
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

// ----- a test acting as the agent ----------------------------------------------------------------

/// Hands each session's runner to the test; the session runs until the test sends its outcome.
pub struct TestAgent {
    runners: crossbeam_channel::Receiver<(SessionRunner, crossbeam_channel::Sender<AgentOutcome>)>,
}

impl TestAgent {
    pub fn new() -> (TestAgent, AgentFn) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let agent: AgentFn = Arc::new(move |runner: SessionRunner| {
            let (done_tx, done_rx) = crossbeam_channel::bounded(1);
            let stop_probe = runner.clone();
            if tx.send((runner, done_tx)).is_err() {
                return AgentOutcome::Failed("test agent gone".into());
            }
            // Until the test decides, behave like an agent that honours stops.
            loop {
                match done_rx.recv_timeout(Duration::from_millis(20)) {
                    Ok(outcome) => return outcome,
                    // The test dropped its sender: it will not decide, so just wait for the stop
                    // (without this the loop would spin on the closed channel).
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                        while !stop_probe.wait_for_stop(Duration::from_secs(60)) {}
                        return AgentOutcome::Stopped;
                    }
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                }
                if stop_probe.stop_requested() {
                    return AgentOutcome::Stopped;
                }
            }
        });
        (TestAgent { runners: rx }, agent)
    }

    /// The next session's runner, once it has a worker.
    pub fn next(&self) -> (SessionRunner, crossbeam_channel::Sender<AgentOutcome>) {
        self.runners.recv_timeout(Duration::from_secs(10)).expect("a session reached the agent")
    }
}

// ----- the built binary ----------------------------------------------------------------------------

/// A spawned process killed (and reaped) on drop, so a failing test leaves nothing running.
pub struct ChildGuard(pub std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agent-controller"))
}

/// `len` bytes no compressor can shrink (xorshift), the same on every call.
pub fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `GET /health` over a fresh connection: its status (0 if none came within `limit`) and how
/// long it took.
pub fn raw_health(addr: &str, limit: std::time::Duration) -> (u16, std::time::Duration) {
    use std::io::{Read, Write};
    let t = std::time::Instant::now();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut head = [0u8; 12];
    let status = match s.read_exact(&mut head) {
        Ok(()) => String::from_utf8_lossy(&head[9..12]).parse().unwrap_or(0),
        Err(_) => 0,
    };
    (status, t.elapsed())
}

/// The real binary started from `cmd` (its stderr piped here), once both servers listen.
pub struct Serving {
    pub child: ChildGuard,
    /// The rest of the daemon's stderr: read it, or drain it so the daemon never blocks.
    pub stderr: std::io::BufReader<std::process::ChildStderr>,
    pub api: String,
    pub worker: String,
    /// The stderr lines read until both servers listened.
    pub lines: Vec<String>,
}

/// Spawn `cmd` with its stderr piped and wait until both servers listen.
pub fn start_serving(cmd: &mut std::process::Command) -> Serving {
    let mut child = ChildGuard(cmd.stderr(std::process::Stdio::piped()).spawn().unwrap());
    let mut stderr = std::io::BufReader::new(child.0.stderr.take().unwrap());
    let (api, worker, lines) = read_bound_addresses(&mut stderr);
    Serving { child, stderr, api, worker, lines }
}

/// Read the child's stderr until both "listening on" lines appear; returns (api, worker) URLs
/// and the lines read so far.
pub fn read_bound_addresses(stderr: &mut impl std::io::BufRead) -> (String, String, Vec<String>) {
    let mut api = None;
    let mut worker = None;
    let mut lines = Vec::new();
    let mut line = String::new();
    while api.is_none() || worker.is_none() {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("daemon exited early: {lines:?}");
        }
        if let Some(rest) = line.split("API server listening on ").nth(1) {
            api = Some(rest.trim().to_string());
        }
        if let Some(rest) = line.split("worker server listening on ").nth(1) {
            worker = Some(rest.trim().to_string());
        }
        lines.push(line.clone());
    }
    (api.unwrap(), worker.unwrap(), lines)
}

/// Upload `bytes` as `filename` into the session `cmd` belongs to, as a worker would; the
/// controller's `/upload` reply.
pub fn upload_as_worker(worker: &Client, cmd: &Value, filename: &str, bytes: &[u8]) -> Value {
    let (ct, body) = multipart(&[
        ("session_id", None, cmd["session_id"].as_str().unwrap().as_bytes()),
        ("filename", None, filename.as_bytes()),
        ("file", Some(filename), bytes),
    ]);
    // A worker holding a secret names itself; a bare (seed-shaped) one does not.
    let r = match cmd["_as"]["secret"].as_str() {
        Some(secret) => worker.with_secret(secret).post_raw(
            &format!("/upload?worker_id={}", cmd["_as"]["worker_id"].as_str().unwrap()),
            &ct,
            &body,
        ),
        None => worker.post_raw("/upload", &ct, &body),
    };
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Build a multipart body from (name, filename?, bytes) parts.
pub fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "----actestboundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, filename, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match filename {
            Some(f) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes()),
        }
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Every file under `dir`, recursively, with its bytes.
pub fn all_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out
}

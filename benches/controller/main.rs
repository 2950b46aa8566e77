//! `make bench`: the performance figures the README lists, printed, not asserted.
//!
//! The daemon under test is the release binary given in `AGENT_CONTROLLER_BIN` (run as a
//! child so its RSS is its own); the command round trip runs in-process through the agent
//! seam. Everything targets loopback and is bounded in time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_controller::config::Config;
use agent_controller::daemon::Daemon;
use agent_controller::session::{AgentOutcome, SessionRunner};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod results;
mod seed;
mod steps;
mod workers;
mod zips;

use workers::{browser_commands, desktop_screenshots, many_workers};

const MIB: u64 = 1024 * 1024;

fn main() {
    // `cargo test --all-targets` runs bench targets without `--bench`: nothing to measure then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let bin = PathBuf::from(
        std::env::var("AGENT_CONTROLLER_BIN").unwrap_or_else(|_| "target/release/agent-controller".into()),
    );
    let work = std::env::temp_dir().join(format!("ac-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let want = |name: &str| only.is_empty() || only.iter().any(|o| o == name);

    println!("agent-controller benchmarks ({})", bin.display());
    if want("size") {
        let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
        println!("release binary size: {:.2} MiB", size as f64 / MIB as f64);
    }
    if want("idle") {
        idle_and_startup(&bin, &work);
    }
    if want("roundtrip") {
        round_trip(&work);
    }
    if want("upload") {
        upload_and_zip(&bin, &work);
        zips::zip_figures(&bin, &work);
    }
    if want("steps") {
        steps::per_step(&bin, &work);
    }
    if want("bigresult") {
        results::big_result(&bin, &work);
    }
    if want("seed") {
        seed::seed_figures(&bin, &work);
    }
    if want("workers") {
        many_workers(&bin, &work, 500, 50, 2);
    }
    if want("scale") {
        many_workers(&bin, &work, 2000, 200, 2);
    }
    if want("browser") {
        browser_commands(&bin.with_file_name("agent-worker"), &work);
    }
    if want("desktop") {
        desktop_screenshots(&bin.with_file_name("agent-worker"), &work);
    }
    let _ = std::fs::remove_dir_all(&work);
}

// ----- helpers -------------------------------------------------------------------------------

struct Spawned {
    child: Child,
    api: String,
    worker: String,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// A loopback "model" that holds every call for a minute, so sessions stay running as they
/// do while a real model thinks. Its URL goes into each daemon's config.
fn slow_model() -> &'static str {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_secs(60));
                    let _ = request.respond(tiny_http::Response::empty(529));
                });
            }
        });
        url
    })
}

fn spawn(bin: &Path, dir: &Path, config: &str) -> (Spawned, Duration) {
    spawn_with_model(bin, dir, config, slow_model())
}

/// Start the daemon with `config` plus `api.base_url` pointing at the loopback model at `model`.
fn spawn_with_model(bin: &Path, dir: &Path, config: &str, model: &str) -> (Spawned, Duration) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.yaml"), format!("{config}api: {{base_url: \"{model}\"}}\n")).unwrap();
    let t = Instant::now();
    let mut child = Command::new(bin)
        .args(["serve", "--config", "config.yaml"])
        .env("ANTHROPIC_API_KEY", "bench")
        .current_dir(dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the daemon");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut api, mut worker) = (None, None);
    let mut line = String::new();
    while api.is_none() || worker.is_none() {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "daemon exited");
        if let Some(r) = line.split("API server listening on http://").nth(1) {
            api = Some(r.trim().to_string());
        }
        if let Some(r) = line.split("worker server listening on http://").nth(1) {
            worker = Some(r.trim().to_string());
        }
    }
    let ready = t.elapsed();
    // Keep draining stderr so the daemon never blocks on a full pipe; kept beside its output
    // (a failed bench leaves the work directory in place).
    let mut log = std::fs::File::create(dir.join("daemon.stderr")).unwrap();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut log);
    });
    (Spawned { child, api: api.unwrap(), worker: worker.unwrap() }, ready)
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A minimal keep-alive HTTP/1.1 client: one request, one response with Content-Length.
struct Conn {
    reader: BufReader<TcpStream>,
    /// The worker's secret, sent with every request.
    secret: Option<String>,
}

impl Conn {
    fn open(addr: &str) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        Ok(Conn { reader: BufReader::new(s), secret: None })
    }

    fn for_worker(mut self, reg: &Value) -> Conn {
        self.secret = reg["worker_secret"].as_str().map(str::to_string);
        self
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n", body.len());
        if !body.is_empty() {
            req.push_str("Content-Type: application/json\r\n");
        }
        if let Some(secret) = &self.secret {
            req.push_str(&format!("X-Worker-Secret: {secret}\r\n"));
        }
        req.push_str("\r\n");
        let mut buf = req.into_bytes();
        buf.extend_from_slice(body);
        self.reader.get_mut().write_all(&buf)?;
        self.read_response()
    }

    fn read_response(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut len = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body)?;
        Ok((status, body))
    }
}

fn post_json(addr: &str, path: &str, body: &Value) -> Value {
    let mut c = Conn::open(addr).unwrap();
    let (status, bytes) = c.request("POST", path, &serde_json::to_vec(body).unwrap()).unwrap();
    assert!(status < 300, "{path}: {status} {}", String::from_utf8_lossy(&bytes));
    serde_json::from_slice(&bytes).unwrap()
}

fn get_json(addr: &str, path: &str) -> Value {
    let mut c = Conn::open(addr).unwrap();
    let (_, bytes) = c.request("GET", path, b"").unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn wait_running(api: &str, id: &str) {
    let t = Instant::now();
    while get_json(api, &format!("/sessions/{id}"))["status"] != "running" {
        assert!(t.elapsed() < Duration::from_secs(10), "session never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

// ----- the figures ----------------------------------------------------------------------------

fn idle_and_startup(bin: &Path, work: &Path) {
    let mut readies = Vec::new();
    let mut rss = 0;
    for i in 0..10 {
        let (d, ready) = spawn(bin, &work.join(format!("idle{i}")), "server: {api_port: 0, worker_port: 0}\n");
        readies.push(ready);
        if i == 9 {
            std::thread::sleep(Duration::from_millis(500));
            rss = rss_kib(d.child.id(), "VmRSS:");
        }
    }
    readies.sort();
    println!(
        "start to ready (spawn → both servers listening): median {:.1} ms, max {:.1} ms",
        ms(readies[5]),
        ms(readies[9])
    );
    println!("idle RSS: {:.2} MiB", rss as f64 / 1024.0);
}

/// An in-process daemon whose agent hands each session's runner to the bench and finishes
/// when told to.
fn daemon_with_test_agent(
    dir: &Path,
) -> (Daemon, crossbeam_channel::Receiver<SessionRunner>, crossbeam_channel::Sender<()>) {
    let mut config = Config::default();
    config.server.api_port = 0;
    config.server.worker_port = 0;
    config.output.dir = dir.to_path_buf();
    let (tx, rx) = crossbeam_channel::bounded::<SessionRunner>(1);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
    let done_rx = Arc::new(done_rx);
    let agent: agent_controller::session::AgentFn = Arc::new(move |runner: SessionRunner| {
        tx.send(runner).unwrap();
        let _ = done_rx.recv();
        AgentOutcome::Finished { summary: "bench".into() }
    });
    (Daemon::start(config, agent).unwrap(), rx, done_tx)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn round_trip(work: &Path) {
    let (daemon, rx, done_tx) = daemon_with_test_agent(&work.join("rt"));
    let worker_addr = daemon.worker_addr().to_string();
    let api_addr = daemon.api_addr().to_string();
    let reg = post_json(&worker_addr, "/register", &json!({"hostname": "bench", "capabilities": ["browser"]}));
    let wid = reg["worker_id"].as_str().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let w = worker_addr.clone();
    let worker = std::thread::spawn(move || {
        let mut c = Conn::open(&w).unwrap().for_worker(&reg);
        while !stop2.load(Ordering::Relaxed) {
            let (_, body) = c.request("GET", &format!("/command?worker_id={wid}"), b"").unwrap();
            let cmd: Value = serde_json::from_slice(&body).unwrap();
            if cmd["action"] == "wait" {
                continue;
            }
            let result = json!({"id": cmd["id"], "success": true, "data": {"ok": true}});
            c.request("POST", &format!("/result?worker_id={wid}"), &serde_json::to_vec(&result).unwrap()).unwrap();
        }
    });
    post_json(&api_addr, "/sessions", &json!({"mode": "explore", "target": "https://bench.test"}));
    let runner = rx.recv().unwrap();
    let mut samples = Vec::with_capacity(5000);
    for i in 0..5200 {
        let t = Instant::now();
        runner.execute("browser_get_page_info", json!({"i": i}), Duration::from_secs(10)).unwrap();
        if i >= 200 {
            samples.push(t.elapsed());
        }
    }
    samples.sort();
    println!(
        "command round trip agent → worker → result (loopback, {} samples): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        samples.len(),
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().unwrap())
    );
    stop.store(true, Ordering::Relaxed);
    // One more command lets the worker loop see the stop flag.
    let _ = runner.execute("noop", json!({}), Duration::from_secs(5));
    let _ = done_tx.send(());
    let _ = worker.join();
    daemon.shutdown();
}

/// Loopback TCP throughput for 1 GiB, the ceiling any upload can reach here.
fn raw_loopback() -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; MIB as usize];
        let mut total = 0u64;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break total;
            }
            total += n as u64;
        }
    });
    let buf = vec![7u8; MIB as usize];
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    for _ in 0..1024 {
        s.write_all(&buf).unwrap();
    }
    drop(s);
    let total = reader.join().unwrap();
    total as f64 / MIB as f64 / t.elapsed().as_secs_f64()
}

fn dd_fsync(dir: &Path) -> f64 {
    let target = dir.join("dd.test");
    let t = Instant::now();
    let ok = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={}", target.display()), "bs=1M", "count=1024", "conv=fsync"])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&target);
    if ok { 1024.0 / secs } else { 0.0 }
}

fn upload_and_zip(bin: &Path, work: &Path) {
    let dir = work.join("upload");
    let (d, _) = spawn(
        bin,
        &dir,
        "server: {api_port: 0, worker_port: 0}\nfiles: {max_file_size_mb: 2048, max_session_storage_mb: 8192}\n",
    );
    let pid = d.child.id();
    // The source file: 1 GiB of incompressible-looking bytes, written once, read from cache.
    let src = work.join("source.mp4");
    {
        let mut f = std::fs::File::create(&src).unwrap();
        let mut block = vec![0u8; MIB as usize];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for b in block.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        for i in 0..1024u32 {
            block[..4].copy_from_slice(&i.to_le_bytes());
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
    }
    let reg = post_json(&d.worker, "/register", &json!({"hostname": "uploader", "capabilities": ["browser"]}));
    let wid = reg["worker_id"].as_str().unwrap().to_string();
    let created =
        post_json(&d.api, "/sessions", &json!({"mode": "task", "target": "https://x.test", "instruction": "upload"}));
    let sid = created["session_id"].as_str().unwrap().to_string();
    wait_running(&d.api, &sid);

    let loopback = raw_loopback();
    let dd = dd_fsync(&dir);
    let rss_before = rss_kib(pid, "VmRSS:");
    let hwm_before = rss_kib(pid, "VmHWM:");
    let boundary = "benchboundary";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"session_id\"\r\n\r\n{sid}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"filename\"\r\n\r\nbig.mp4\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.mp4\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let size = std::fs::metadata(&src).unwrap().len();
    let total = head.len() as u64 + size + tail.len() as u64;
    let mut conn = Conn::open(&d.worker).unwrap();
    let secret = reg["worker_secret"].as_str().unwrap().to_string();
    let t = Instant::now();
    {
        let s = conn.reader.get_mut();
        write!(s, "POST /upload?worker_id={wid} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {total}\r\n\r\n").unwrap();
        s.write_all(head.as_bytes()).unwrap();
        let mut f = std::fs::File::open(&src).unwrap();
        std::io::copy(&mut f, s).unwrap();
        s.write_all(tail.as_bytes()).unwrap();
    }
    let (status, body) = conn.read_response().unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let rate = 1024.0 / secs;
    let hwm_after = rss_kib(pid, "VmHWM:");
    println!("raw loopback TCP: {loopback:.0} MiB/s; dd bs=1M conv=fsync: {dd:.0} MiB/s");
    println!(
        "upload 1 GiB (multipart, streamed, fsync'd): {rate:.0} MiB/s = {:.0}% of dd, {:.0}% of loopback; RSS {:.1} → peak {:.1} MiB (growth {:.1} MiB)",
        100.0 * rate / dd.max(1.0),
        100.0 * rate / loopback.max(1.0),
        rss_before as f64 / 1024.0,
        hwm_after as f64 / 1024.0,
        (hwm_after.saturating_sub(hwm_before.max(rss_before))) as f64 / 1024.0
    );

    // The zip of that session: streamed, media stored.
    let hwm_before = rss_kib(pid, "VmHWM:");
    let t = Instant::now();
    let mut s = TcpStream::connect(&d.api).unwrap();
    write!(s, "GET /sessions/{sid}/files/zip HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = vec![0u8; MIB as usize];
    let mut received = 0u64;
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        received += n as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    let hwm_after = rss_kib(pid, "VmHWM:");
    println!(
        "zip download of the 1 GiB session: {:.0} MiB in {:.2} s ({:.0} MiB/s); RSS peak growth {:.1} MiB",
        received as f64 / MIB as f64,
        secs,
        received as f64 / MIB as f64 / secs,
        hwm_after.saturating_sub(hwm_before) as f64 / 1024.0
    );
    let _ = std::fs::remove_file(&src);
}

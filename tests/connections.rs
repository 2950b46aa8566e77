//! Bounded connections (the front acceptor): a huge head, stalled bodies, thousands of silent
//! connections and a full connection table each leave `/health` answering at once.

use crate::support::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// What `/health` must take while a port is under attack.
const PROMPT: Duration = Duration::from_millis(100);

/// `GET /health` over a fresh connection, waiting at most 5 s: its status and how long it took.
fn health(addr: &str) -> (u16, Duration) {
    raw_health(addr, Duration::from_secs(5))
}

/// The best of three `/health` times (one slow scheduling slice on a shared machine is not the
/// daemon's doing); each must answer 200.
fn health_time(addr: &str) -> Duration {
    (0..3)
        .map(|_| {
            let (status, took) = health(addr);
            assert_eq!(status, 200, "/health did not answer");
            took
        })
        .min()
        .unwrap()
}

fn status_line(s: &TcpStream) -> String {
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line
}

fn proc_status_number(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The daemon binary as a child (so its RSS and threads are its own); its API `host:port`.
fn daemon_child(dir: &TempDir) -> (ChildGuard, String) {
    let Serving { child, mut stderr, api, .. } = start_serving(
        Command::new(binary()).args(["serve", "--api-port", "0", "--worker-port", "0"]).current_dir(dir.path()),
    );
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, api.trim_start_matches("http://").to_string())
}

#[test]
fn a_600_mib_header_line_is_refused_without_growing_the_daemon() {
    let dir = TempDir::new("bighead");
    let (daemon, api) = daemon_child(&dir);
    let pid = daemon.0.id();
    assert_eq!(health(&api).0, 200);
    let peak_before = proc_status_number(pid, "VmHWM:");

    let mut s = TcpStream::connect(&api).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ").unwrap();
    let block = vec![b'a'; 1 << 20];
    let mut sent = 0usize;
    let mut during = Vec::new();
    while sent < 600 << 20 {
        match s.write(&block) {
            Ok(n) => sent += n,
            Err(_) => break, // refused: the daemon closed the connection
        }
        if during.len() < 3 && sent > 1 << 20 {
            during.push(health_time(&api));
        }
    }
    assert!(sent < 600 << 20, "all 600 MiB of one header line were taken");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let answer = status_line(&s);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer:?}");
    let peak_after = proc_status_number(pid, "VmHWM:");
    let grew = peak_after.saturating_sub(peak_before);
    eprintln!(
        "600 MiB header: refused after {} KiB; peak RSS {peak_before} → {peak_after} KiB; /health during: {during:?}",
        sent >> 10
    );
    for took in &during {
        assert!(*took < PROMPT, "/health took {took:?} during the attack");
    }
    assert!(grew < 8 << 10, "the daemon's peak RSS grew by {grew} KiB");
    let took = health_time(&api);
    assert!(took < PROMPT, "/health took {took:?} after the attack");
}

#[test]
fn declared_bodies_that_never_come_do_not_take_the_handler_pool() {
    let dir = TempDir::new("stalledbody");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("api-token-0123456789");
    config.server.header_timeout_s = 2;
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("http://").to_string();
    // Twice the handler threads, each with the token, so the route would read the body.
    let mut held = Vec::new();
    for _ in 0..16 {
        let mut s = TcpStream::connect(&api).unwrap();
        s.write_all(
            b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer api-token-0123456789\r\n\
              Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"mode\":",
        )
        .unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(100));
    let took = health_time(&api);
    eprintln!("/health beside 16 stalled bodies: {took:?}");
    assert!(took < PROMPT, "/health took {took:?} beside 16 stalled bodies");
    // A normal request with a body is served by the same pool.
    let r = d.client().post("/sessions", &json!({"mode": "explore", "target": "https://x.test"}));
    assert_eq!(r.status, 201, "{}", r.text());
    // The stalled ones are answered 408 once their time is up, not left open.
    for s in &held {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let line = status_line(s);
        assert!(line.starts_with("HTTP/1.1 408"), "{line:?}");
    }
}

#[test]
fn two_thousand_silent_connections_do_not_silence_a_port() {
    let dir = TempDir::new("silent");
    let d = TestDaemon::idle(test_config(dir.path()));
    let api = d.api.trim_start_matches("http://").to_string();
    let mut held = Vec::with_capacity(2000);
    let mut times = Vec::new();
    for i in 0..2000 {
        held.push(TcpStream::connect(&api).unwrap());
        if i % 500 == 499 {
            times.push(health_time(&api));
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    times.push(health_time(&api));
    eprintln!("/health beside 500…2000 silent connections: {times:?}");
    for took in &times {
        assert!(*took < PROMPT, "/health took {took:?} beside silent connections: {times:?}");
    }
    drop(held);
    assert_eq!(health(&api).0, 200, "the accept loop survived");
}

#[test]
fn a_full_connection_table_refuses_newcomers_with_503() {
    let dir = TempDir::new("conncap");
    let mut config = test_config(dir.path());
    config.server.max_connections = 4;
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("http://").to_string();
    // Four uploads in flight (past the held-back part of their body): none may be evicted.
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(&api).unwrap();
        s.write_all(b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n").unwrap();
        s.write_all(&vec![b' '; 200_000]).unwrap();
        busy.push(s);
    }
    std::thread::sleep(Duration::from_millis(200));
    let (status, took) = health(&api);
    assert_eq!(status, 503, "a fifth connection beside four busy ones");
    assert!(took < PROMPT, "{took:?}");
    drop(busy.pop());
    let r = wait_until(Duration::from_secs(5), "a freed slot", || {
        let (status, _) = health(&api);
        (status == 200).then_some(status)
    });
    assert_eq!(r, 200);
}

#[test]
fn keep_alive_connections_carry_long_polls_past_the_read_timeout() {
    let dir = TempDir::new("longpoll");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 3;
    config.server.read_timeout_s = 1;
    config.server.header_timeout_s = 1;
    let d = TestDaemon::idle(config);
    let worker = d.worker.trim_start_matches("http://").to_string();
    let r = d.worker_client().post("/register", &json!({"hostname": "lp", "capabilities": ["browser"]}));
    let (id, secret) =
        (r.json()["worker_id"].as_str().unwrap().to_string(), r.json()["worker_secret"].as_str().unwrap().to_string());
    let mut s = TcpStream::connect(&worker).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    for _ in 0..2 {
        let t = Instant::now();
        write!(s, "GET /command?worker_id={id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\n\r\n")
            .unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 "), "{line:?}");
        let mut length = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
        assert!(String::from_utf8_lossy(&body).contains("wait"), "{}", String::from_utf8_lossy(&body));
        // The poll was parked past the read and header timeouts, on the same connection.
        assert!(t.elapsed() > Duration::from_millis(2500), "{:?}", t.elapsed());
    }
}

/// A pids cgroup for one process (cgroup v1 or v2), removed on drop; `None` where this host
/// gives us none (not root, no pids controller).
struct PidsCgroup(std::path::PathBuf);

impl PidsCgroup {
    fn new(tag: &str) -> Option<PidsCgroup> {
        for root in ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"] {
            let dir = std::path::Path::new(root).join(format!("{tag}-{}", std::process::id()));
            if std::fs::create_dir(&dir).is_ok() {
                if dir.join("pids.max").exists() {
                    return Some(PidsCgroup(dir));
                }
                let _ = std::fs::remove_dir(&dir);
            }
        }
        None
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("pids.max"), "max");
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn a_thread_that_cannot_be_started_refuses_its_connection_not_the_daemon() {
    let Some(cgroup) = PidsCgroup::new("ac-spawn") else {
        eprintln!("SKIPPED: no writable pids cgroup here");
        return;
    };
    let dir = TempDir::new("spawnfail");
    let (mut daemon, api) = daemon_child(&dir);
    let pid = daemon.0.id();
    assert_eq!(health(&api).0, 200);
    std::fs::write(cgroup.0.join("cgroup.procs"), pid.to_string()).unwrap();
    // Room for two more threads: two silent connections take it.
    let threads = proc_status_number(pid, "Threads:");
    std::fs::write(cgroup.0.join("pids.max"), (threads + 2).to_string()).unwrap();
    let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(&api).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut s = TcpStream::connect(&api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let line = status_line(&s);
    assert!(line.starts_with("HTTP/1.1 503"), "no thread for a third connection: {line:?}");
    assert!(daemon.0.try_wait().unwrap().is_none(), "the daemon died");
    drop(held);
    let status = wait_until(Duration::from_secs(5), "/health after the threads came back", || {
        let (status, _) = health(&api);
        (status == 200).then_some(status)
    });
    assert_eq!(status, 200);
    assert!(daemon.0.try_wait().unwrap().is_none(), "the daemon died");
}

#[test]
fn a_client_cannot_forge_the_address_the_routes_see() {
    let dir = TempDir::new("peer");
    let mut config = test_config(dir.path());
    config.server.long_poll_s = 1;
    let d = TestDaemon::idle(config);
    // Of two bare (legacy) workers, a bare request is mapped by the address it comes from.
    for host in ["bare-1", "bare-2"] {
        let r = d.worker_client().post("/register", &json!({"hostname": host, "capabilities": ["browser"]}));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let worker = d.worker.trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(&worker).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(
        b"GET /command HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Agent-Controller-Peer: 10.9.9.9:1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "the forged address was believed: {reply}");
    assert!(reply.contains("wait"), "{reply}");
}

/// A rustls client trusting only the test CA at `ca`.
fn tls_client(ca: &std::path::Path) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    std::sync::Arc::new(config)
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn tls_connect(addr: &str, config: &std::sync::Arc<rustls::ClientConfig>) -> TlsStream {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::clone(config), "127.0.0.1".try_into().unwrap()).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// The first line of what comes back on `s` ("" if nothing did).
fn tls_status_line(s: &mut TlsStream) -> String {
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line
}

/// The best of three `GET /health` over new TLS connections, handshake included; each 200.
fn tls_health_time(addr: &str, config: &std::sync::Arc<rustls::ClientConfig>) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let mut s = tls_connect(addr, config);
            s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
            let line = tls_status_line(&mut s);
            assert!(line.starts_with("HTTP/1.1 200"), "/health over TLS: {line:?}");
            t.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
fn over_tls_stalled_handshakes_and_a_huge_head_leave_health_prompt() {
    let dir = TempDir::new("tls-attack");
    let certs = crate::tls::make_certs(dir.path());
    let mut config = test_config(&dir.path().join("out"));
    config.server.tls_cert = certs.cert.clone();
    config.server.tls_key = certs.key.clone();
    config.server.header_timeout_s = 2;
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("https://").to_string();
    let client = tls_client(&certs.ca);
    let before = tls_health_time(&api, &client);

    // 300 handshakes that stall: a record header promising a ClientHello, and one byte of it.
    let stalled: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut s = TcpStream::connect(&api).unwrap();
            s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let beside_stalled = tls_health_time(&api, &client);

    // A head that never ends, after a good handshake: refused 431 over TLS at 64 KiB.
    let mut s = tls_connect(&api, &client);
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ").unwrap();
    s.write_all(&vec![b'a'; 80 * 1024]).unwrap();
    let during_head = tls_health_time(&api, &client);
    let answer = tls_status_line(&mut s);
    assert!(answer.starts_with("HTTP/1.1 431"), "an 80 KiB head over TLS: {answer:?}");
    eprintln!(
        "/health over TLS (handshake included): {before:?} alone, {beside_stalled:?} beside 300 stalled handshakes, {during_head:?} beside a huge head"
    );
    for took in [beside_stalled, during_head] {
        assert!(took < PROMPT, "/health over TLS took {took:?} during the attack");
    }

    // The stalled handshakes are closed at the head deadline (2 s), not kept.
    let t = Instant::now();
    for mut s in stalled {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut rest = Vec::new();
        let ended = s.read_to_end(&mut rest);
        assert!(
            ended.is_ok() || ended.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "a stalled handshake was kept open: {ended:?}"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(4), "stalled handshakes closed after {:?}", t.elapsed());
}

/// Under concurrent clients, answers of every kind (an error that names its request, an
/// oversized body refused while it still comes, a created session) each reach their own client.
#[test]
fn concurrent_clients_each_get_their_own_answers() {
    let dir = TempDir::new("mixed");
    let d = TestDaemon::idle(test_config(dir.path()));
    let oversized = serde_json::to_vec(&json!({"instruction": "x".repeat(1536 * 1024)})).unwrap();
    std::thread::scope(|scope| {
        for t in 0..6 {
            let (c, oversized) = (d.client(), &oversized);
            scope.spawn(move || {
                for i in 0..45 {
                    let tag = format!("t{t}-{i}");
                    match i % 3 {
                        0 => {
                            let r = c.post(&format!("/nowhere/{tag}"), &json!({}));
                            assert!(
                                r.status == 404 && r.text().contains(&format!("/nowhere/{tag}\"")),
                                "{tag}: {}",
                                r.text()
                            );
                        }
                        1 => {
                            let body =
                                json!({"mode": "task", "target": "https://x.test", "instruction": "y", tag.clone(): 1});
                            let r = c.post("/sessions", &body);
                            assert!(r.status == 400 && r.text().contains(&tag), "{tag}: {}", r.text());
                        }
                        _ => {
                            let r = c.post_raw("/sessions", "application/json", oversized);
                            assert_eq!(r.status, 413, "{tag}: {}", r.text());
                        }
                    }
                }
            });
        }
    });
    let body = json!({"mode": "task", "target": "https://x.test", "instruction": "after"});
    assert_eq!(d.client().post("/sessions", &body).status, 201);
}

/// A large body that comes slowly (a worker uploading over a slow link) is read on a thread of
/// its own: with every handler thread's worth of such bodies under way, the port still answers.
#[test]
fn slow_large_bodies_do_not_take_the_handler_pool() {
    let dir = TempDir::new("slowbody");
    let mut config = test_config(dir.path());
    config.server.worker_threads = 2;
    let d = TestDaemon::idle(config);
    let worker = d.worker.trim_start_matches("http://").to_string();
    let (id, client) = register_as(&d.worker_client(), json!({"hostname": "slow", "capabilities": ["shell"]}));
    let secret = client.secret.clone().unwrap();
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(&worker).unwrap();
        let head = format!(
            "POST /result?worker_id={id} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Worker-Secret: {secret}\r\n\
             Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{{\"id\": \""
        );
        s.write_all(head.as_bytes()).unwrap();
        // Past what the front holds back, so a handler reads the rest as it comes.
        s.write_all(&vec![b'x'; 100 * 1024]).unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    let took = health_time(&worker);
    assert!(took < PROMPT, "/health took {took:?} beside 4 slow bodies on 2 handler threads");
    let r = d.worker_client().with_secret(&secret).post(&format!("/heartbeat?worker_id={id}"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_refused_body_is_answered_at_once_not_drained_at_the_senders_pace() {
    let dir = TempDir::new("refusedbody");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new("api-token-0123456789");
    let d = TestDaemon::idle(config);
    let api = d.api.trim_start_matches("http://").to_string();
    // No token; a large body declared, 100 KiB of it sent (past what the front holds back, so
    // the route sees the request), the rest trickled.
    let mut s = TcpStream::connect(&api).unwrap();
    s.write_all(b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000000\r\n\r\n").unwrap();
    s.write_all(&vec![b' '; 100 * 1024]).unwrap();
    let mut trickle = s.try_clone().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let trickler = std::thread::spawn(move || {
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) && trickle.write_all(b" ").is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let line = status_line(&s);
    assert!(line.starts_with("HTTP/1.1 401"), "{line:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "the refusal took {:?}", t.elapsed());
    // Then the connection ends, with the body never read to its end.
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(t.elapsed() < Duration::from_secs(5), "the connection stayed open {:?}", t.elapsed());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    trickler.join().unwrap();
    assert!(d.client().get("/sessions").json().as_array().unwrap().is_empty());
}

//! HTTPS on both ports: a private CA and a server certificate made at test time (rcgen), the
//! real daemon, the real worker and the console verifying it, refusals without the CA, plain
//! HTTP to a TLS port, the exposure rule, bad key files.

use crate::support::worker::RealWorker;
use crate::support::*;
use agent_controller::config::Config;
use agent_controller::daemon::Daemon;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The CA's PEM (also `support::TEST_CA`) and its signing half, made once per test process.
static CA: OnceLock<(String, Issuer<'static, KeyPair>)> = OnceLock::new();

fn ca() -> &'static (String, Issuer<'static, KeyPair>) {
    CA.get_or_init(|| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        let _ = TEST_CA.set(cert.der().to_vec());
        (cert.pem(), Issuer::new(params, key))
    })
}

/// The CA (`ca.pem`) and a new certificate for 127.0.0.1 and localhost signed by it
/// (`cert.pem`, `key.pem`), in `dir`.
pub struct Certs {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn make_certs(dir: &Path) -> Certs {
    let (ca_pem, issuer) = ca();
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let certs = Certs { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    std::fs::write(&certs.ca, ca_pem).unwrap();
    std::fs::write(&certs.cert, cert.pem()).unwrap();
    std::fs::write(&certs.key, key.serialize_pem()).unwrap();
    certs
}

fn tls_config(dir: &Path, certs: &Certs) -> Config {
    let mut c = test_config(&dir.join("out"));
    c.server.tls_cert = certs.cert.clone();
    c.server.tls_key = certs.key.clone();
    c
}

/// A client that trusts only `ca`.
fn tls_agent(ca: &Path) -> ureq::Agent {
    let tls = agent_controller::util::tls::client_tls(Some(ca)).unwrap();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn get(agent: &ureq::Agent, url: &str) -> (u16, String) {
    let mut resp = agent.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    (resp.status().as_u16(), resp.body_mut().read_to_string().unwrap())
}

#[test]
fn worker_and_console_speak_https_verified_by_a_private_ca() {
    let dir = TempDir::new("tls-e2e");
    let certs = make_certs(dir.path());
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(tls_config(dir.path(), &certs), agent);
    assert!(d.api.starts_with("https://") && d.worker.starts_with("https://"), "{} {}", d.api, d.worker);
    let https = tls_agent(&certs.ca);
    let (status, body) = get(&https, &format!("{}/health", d.api));
    assert_eq!(status, 200, "{body}");
    let (status, page) = get(&https, &format!("{}/", d.api));
    assert_eq!(status, 200);
    assert!(page.contains("<html"), "the web page over TLS: {page:.200}");
    assert_eq!(get(&https, &format!("{}/health", d.worker)).0, 200);

    // Without the CA the worker refuses the certificate and says what to do, at once.
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-worker"))
        .args(["--controller", &d.worker, "--capabilities", "shell", "--hostname", "no-ca"])
        .env_remove("AGENT_WORKER_CA_FILE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not trusted") && stderr.contains("--ca-file"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // With it: registered, parked in its long poll, and a command round trip over TLS.
    let _worker = RealWorker::start_with(&d, "tls-box", "shell", &["--ca-file", certs.ca.to_str().unwrap()]);
    let id = create_session_tls(
        &https,
        &d.api,
        json!({"mode": "task", "type": "shell", "target": "tls-box", "instruction": "x"}),
    );
    let (r, _done) = test_agent.next();
    // Let the worker park its poll first, so the command is answered off the pool.
    std::thread::sleep(Duration::from_millis(300));
    let out = r.execute("run_command", json!({"command": "echo over-tls"}), Duration::from_secs(30)).unwrap();
    assert_eq!(out["stdout"], "over-tls\n");
    // A large result (several TLS records each way) arrives whole.
    let out = r.execute("run_command", json!({"command": "yes x | head -c 60000"}), Duration::from_secs(30)).unwrap();
    assert_eq!(out["stdout"].as_str().unwrap().len(), 60000);
    let rounds = 20;
    let t = Instant::now();
    for i in 0..rounds {
        let out = r.execute("run_command", json!({"command": format!("echo {i}")}), Duration::from_secs(30)).unwrap();
        assert_eq!(out["stdout"], format!("{i}\n"));
    }
    eprintln!("FIGURE: command round trip over TLS: {:?} each", t.elapsed() / rounds);

    // The console: verified with --ca-file, refused without it.
    let console = |extra: &[&str]| {
        Command::new(binary())
            .args(["workers", "--api", &d.api])
            .args(extra)
            .env_remove("AGENT_CONTROLLER_CA_FILE")
            .env_remove("AGENT_CONTROLLER_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = console(&["--ca-file", certs.ca.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("tls-box"));
    let o = console(&[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("not trusted") && stderr.contains("--ca-file"), "{stderr}");
    let (status, session) = get(&https, &format!("{}/sessions/{id}", d.api));
    assert_eq!(status, 200, "{session}");
}

fn create_session_tls(agent: &ureq::Agent, api: &str, body: Value) -> String {
    let mut resp = agent.post(format!("{api}/sessions")).send_json(&body).unwrap();
    let v: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(resp.status().as_u16(), 201, "{v}");
    v["session_id"].as_str().unwrap().to_string()
}

#[test]
fn plain_http_to_a_tls_port_gets_no_answer() {
    let dir = TempDir::new("tls-plain");
    let certs = make_certs(dir.path());
    let mut d = TestDaemon::idle(tls_config(dir.path(), &certs));
    let addr = d.api.trim_start_matches("https://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(!got.starts_with(b"HTTP/"), "no HTTP answer in clear: {:?}", String::from_utf8_lossy(&got));
    // An ordinary HTTP client fails too, and a TLS client with the CA still gets in afterwards.
    assert!(agent().get(format!("http://{addr}/health")).call().is_err());
    assert_eq!(get(&tls_agent(&certs.ca), &format!("{}/health", d.api)).0, 200);
    // A client that stalls in the handshake is let go.
    let mut idle = std::net::TcpStream::connect(&addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t = Instant::now();
    let _ = idle.read(&mut [0u8; 16]);
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    // Shutdown ends the TLS front too: the port stops accepting.
    d.shutdown();
    wait_until(Duration::from_secs(5), "the TLS port to close", || {
        std::net::TcpStream::connect(&addr).is_err().then_some(())
    });
}

#[test]
fn bad_tls_files_stop_the_start_naming_the_key() {
    let dir = TempDir::new("tls-bad");
    let certs = make_certs(dir.path());
    let start = |cert: &Path, key: &Path| {
        let mut c = test_config(&dir.path().join("out"));
        c.server.tls_cert = cert.to_path_buf();
        c.server.tls_key = key.to_path_buf();
        Daemon::start(c, std::sync::Arc::new(agent_controller::session::runner::idle_agent))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let missing = dir.path().join("missing.pem");
    let e = start(&missing, &certs.key);
    assert!(e.contains("server.tls_cert") && e.contains("missing.pem"), "{e}");
    let e = start(&certs.cert, &missing);
    assert!(e.contains("server.tls_key") && e.contains("missing.pem"), "{e}");
    // A key that is not a key, and a certificate file given as the key: named, without contents.
    let e = start(&certs.cert, &certs.cert);
    assert!(e.contains("server.tls_key"), "{e}");
    assert!(!e.contains("BEGIN"), "{e}");
    let e = start(&certs.key, &certs.key);
    assert!(e.contains("server.tls_cert"), "{e}");
    // A key of another pair.
    let other = make_certs(&{
        let d = dir.path().join("other");
        std::fs::create_dir_all(&d).unwrap();
        d
    });
    let e = start(&certs.cert, &other.key);
    assert!(e.contains("server.tls_key"), "{e}");
}

#[test]
fn an_exposed_bind_starts_with_tls_and_config_check_shows_the_keys() {
    let dir = TempDir::new("tls-exposed");
    let certs = make_certs(dir.path());
    let yaml = format!(
        "server:\n  tls_cert: {:?}\n  tls_key: {:?}\noutput:\n  dir: {:?}\n",
        certs.cert.display().to_string(),
        certs.key.display().to_string(),
        dir.path().join("out").display().to_string()
    );
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, yaml).unwrap();
    let out = Command::new(binary()).args(["config", "check", "--config", config.to_str().unwrap()]).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(shown.contains(&format!("tls_cert: \"{}\"", certs.cert.display())), "{shown}");
    assert!(shown.contains(&format!("tls_key: \"{}\"", certs.key.display())), "{shown}");
    let key_text = std::fs::read_to_string(&certs.key).unwrap();
    assert!(!shown.contains(key_text.lines().nth(1).unwrap()), "never the key itself");

    let Serving { mut child, stderr: _stderr, api, worker, .. } = start_serving(
        Command::new(binary())
            .args(["--config", config.to_str().unwrap(), "--host", "0.0.0.0", "--api-port", "0", "--worker-port", "0"])
            .env("AGENT_CONTROLLER_TOKEN", "tls-api-token-0123")
            .env("AGENT_CONTROLLER_WORKER_TOKEN", "tls-worker-token-4567"),
    );
    assert!(api.starts_with("https://0.0.0.0:") && worker.starts_with("https://"), "{api} {worker}");
    let port = api.rsplit(':').next().unwrap();
    let mut resp = tls_agent(&certs.ca)
        .get(format!("https://127.0.0.1:{port}/sessions"))
        .header("Authorization", "Bearer tls-api-token-0123")
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{}", resp.body_mut().read_to_string().unwrap());
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert!(child.0.wait().unwrap().success());
}

//! The worker's side of the worker protocol: register, long-poll, post results, upload files,
//! fetch a file of the session to put into a page.
//!
//! This file and `worker.rs` are the only places that know the wire format; backends never
//! talk to the controller. The worker registers asking for a secret and sends it
//! (`X-Worker-Secret`) with every request, and with its next registration, which proves it is
//! the same worker coming back. Uploads stream from disk with a known length (never read whole into
//! memory). When the controller is away, `Backoff` spaces the retries (1 s doubling to 30 s,
//! with jitter) and the outage is logged once, not on every attempt.

use crate::error::WorkerError;
use agent_controller::protocol::{RegisterResponse, UploadResponse};
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

#[derive(Clone)]
pub struct Link {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
    pub hostname: String,
    pub capabilities: Vec<String>,
    pub worker_id: Option<String>,
    /// From the last `/register`: kept across a re-registration, as its proof.
    secret: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The controller does not know this worker (it restarted): register again.
    #[error("the controller does not know this worker")]
    Unknown,
    /// No answer, or an answer that is not the protocol.
    #[error("{0}")]
    Down(String),
    /// The controller refused (auth, bad request).
    #[error("HTTP {0}: {1}")]
    Refused(u16, String),
    /// The controller's TLS certificate failed verification: retrying will not help.
    #[error("{0}")]
    Untrusted(String),
}

fn down(e: &ureq::Error) -> LinkError {
    match agent_controller::util::tls::untrusted(e) {
        Some(why) => LinkError::Untrusted(why),
        None => LinkError::Down(describe(e)),
    }
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) => format!("connection error ({})", io.kind()),
        ureq::Error::Timeout(_) => "timed out".into(),
        ureq::Error::ConnectionFailed => "connection refused".into(),
        ureq::Error::HostNotFound => "host not found".into(),
        other => other.to_string(),
    }
}

impl Link {
    pub fn new(
        base: &str,
        token: Option<String>,
        hostname: String,
        capabilities: Vec<String>,
        tls: ureq::tls::TlsConfig,
    ) -> Link {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .build()
            .into();
        Link {
            base: base.trim_end_matches('/').to_string(),
            token,
            agent,
            hostname,
            capabilities,
            worker_id: None,
            secret: None,
        }
    }

    fn url(&self, path: &str) -> String {
        match &self.worker_id {
            Some(id) => format!("{}{path}?worker_id={id}", self.base),
            None => format!("{}{path}", self.base),
        }
    }

    fn auth<B>(&self, rb: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let rb = match &self.secret {
            Some(s) => rb.header("X-Worker-Secret", s),
            None => rb,
        };
        match &self.token {
            Some(t) => rb.header("Authorization", format!("Bearer {t}")),
            None => rb,
        }
    }

    fn answer(result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Value, LinkError> {
        let mut resp = result.map_err(|e| down(&e))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| LinkError::Down(describe(&e)))?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match status {
            200..=299 => Ok(body),
            404 => Err(LinkError::Unknown),
            s => Err(LinkError::Refused(s, body["error"].as_str().unwrap_or(&text).to_string())),
        }
    }

    /// Register, with the browser profiles this worker keeps (when it has a browser).
    pub fn register(&mut self, profiles: Option<Value>) -> Result<RegisterResponse, LinkError> {
        self.worker_id = None;
        let mut body = json!({"hostname": self.hostname, "capabilities": self.capabilities, "use_secret": true,
            "has_playwright": self.capabilities.iter().any(|c| c == "browser"),
            "has_pywinauto": self.capabilities.iter().any(|c| c == "app")});
        if let Some(p) = profiles {
            body["profiles"] = p;
        }
        let rb = self.auth(
            self.agent.post(self.url("/register")).config().timeout_global(Some(Duration::from_secs(30))).build(),
        );
        let v = Self::answer(rb.send_json(&body))?;
        let reg: RegisterResponse =
            serde_json::from_value(v).map_err(|e| LinkError::Down(format!("unexpected /register reply: {e}")))?;
        self.worker_id = Some(reg.worker_id.clone());
        self.secret = Some(reg.worker_secret.clone()).filter(|s| !s.is_empty());
        Ok(reg)
    }

    /// One long poll: a command, `{"action":"wait"}` or `{"action":"shutdown"}`.
    pub fn poll(&self) -> Result<Value, LinkError> {
        let rb = self.agent.get(self.url("/command")).config().timeout_global(Some(Duration::from_secs(330))).build();
        Self::answer(self.auth(rb).call())
    }

    /// `POST /heartbeat` while a command runs; the answer says how often to send it.
    pub fn heartbeat(&self) -> Result<Value, LinkError> {
        let rb = self.auth(
            self.agent.post(self.url("/heartbeat")).config().timeout_global(Some(Duration::from_secs(10))).build(),
        );
        Self::answer(rb.send_empty())
    }

    /// Post a command's outcome; an error goes as its text.
    pub fn post_result(
        &self,
        id: &str,
        outcome: &Result<Value, WorkerError>,
        profiles: Option<&Value>,
    ) -> Result<(), LinkError> {
        let mut body = match outcome {
            Ok(data) => json!({"id": id, "success": true, "data": data}),
            Err(e) => match e.refusal() {
                Some(refusal) => json!({"id": id, "success": false, "error": e.to_string(), "data": refusal}),
                None => json!({"id": id, "success": false, "error": e.to_string()}),
            },
        };
        if let Some(p) = profiles {
            body["profiles"] = p.clone();
        }
        // The worker's own secrets never leave in a result (a command may print them).
        let known: Vec<&str> = self.token.iter().chain(self.secret.iter()).map(String::as_str).collect();
        crate::hygiene::scrub(&mut body, &known);
        let rb = self
            .auth(self.agent.post(self.url("/result")).config().timeout_global(Some(Duration::from_secs(60))).build());
        Self::answer(rb.send_json(&body)).map(|_| ())
    }

    /// Stream `path` to the controller as `filename` for `session_id`.
    pub fn upload(
        &self,
        session_id: &str,
        command_id: &str,
        filename: &str,
        path: &Path,
    ) -> Result<UploadResponse, WorkerError> {
        let boundary =
            format!("agentworker{:x}", std::process::id() as u64 ^ agent_controller::util::clock::random_u64());
        // The part header takes plain ASCII only (the parser rejects control bytes); the real
        // name, minus control characters and bounded, goes in the `filename` field.
        let mut field_name: String =
            filename.chars().filter(|c| !c.is_control()).collect::<String>().trim().to_string();
        while field_name.len() > 255 {
            field_name.pop();
        }
        let header_name: String = field_name
            .chars()
            .map(|c| if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' { c } else { '_' })
            .collect();
        let head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"session_id\"\r\n\r\n{session_id}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"command_id\"\r\n\r\n{command_id}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"filename\"\r\n\r\n{field_name}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{header_name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        );
        let tail = format!("\r\n--{boundary}--\r\n");
        let file = std::fs::File::open(path).map_err(|e| WorkerError::io("cannot open the downloaded file", e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let total = head.len() as u64 + size + tail.len() as u64;
        let body = std::io::Cursor::new(head.into_bytes()).chain(file).chain(std::io::Cursor::new(tail.into_bytes()));
        let rb = self
            .auth(self.agent.post(self.url("/upload")).config().timeout_global(Some(Duration::from_secs(3600))).build())
            .header("Content-Type", format!("multipart/form-data; boundary={boundary}"))
            .header("Content-Length", total.to_string());
        let v = Self::answer(rb.send(ureq::SendBody::from_owned_reader(body)))
            .map_err(|e| WorkerError::Upload(format!("upload to the controller failed: {e}")))?;
        serde_json::from_value(v).map_err(|e| WorkerError::Upload(format!("unexpected /upload reply: {e}")))
    }
}

impl Link {
    /// `GET /files/NAME`: one file of the session this worker serves, streamed into `dest`
    /// (created new, 0600), at most `max` bytes and exactly the length the controller declared.
    pub fn fetch(&self, filename: &str, dest: &Path, max: u64) -> Result<u64, WorkerError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = format!("/files/{}", agent_controller::util::percent_encode(filename));
        let rb =
            self.auth(self.agent.get(self.url(&path)).config().timeout_global(Some(Duration::from_secs(3600))).build());
        let failed =
            |why: String| WorkerError::Upload(format!("could not get {filename:?} from the controller: {why}"));
        let mut resp = rb.call().map_err(|e| failed(describe(&e)))?;
        let status = resp.status().as_u16();
        if status != 200 {
            let text = resp.body_mut().with_config().limit(64 << 10).read_to_string().unwrap_or_default();
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let why = body["error"].as_str().map_or_else(|| format!("HTTP {status}"), str::to_string);
            return Err(if status == 404 { WorkerError::bad(why) } else { failed(why) });
        }
        let declared: u64 = resp
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .ok_or_else(|| failed("the answer has no length".into()))?;
        if declared > max {
            return Err(WorkerError::bad(format!("{filename:?} is larger than the {} MiB a page is given", max >> 20)));
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dest)
            .map_err(|e| WorkerError::io("cannot write the file to upload", e))?;
        let mut reader = resp.body_mut().with_config().limit(declared + 1).reader().take(declared + 1);
        let copied = std::io::copy(&mut reader, &mut file);
        match copied {
            Ok(n) if n == declared => Ok(n),
            Ok(n) => Err(failed(format!("{n} bytes came of {declared}"))),
            Err(e) => Err(failed(format!("it broke off ({})", e.kind()))),
        }
    }
}

/// 1 s doubling to 30 s, each wait ±20 % so a fleet does not reconnect in step.
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    pub fn new() -> Backoff {
        Backoff { failures: 0 }
    }

    /// Note a failure; returns how long to wait and whether this is the first of a run.
    pub fn fail(&mut self) -> (Duration, bool) {
        let first = self.failures == 0;
        let base = (1u64 << self.failures.min(5)).min(30) as f64;
        self.failures += 1;
        let jitter = 0.8 + 0.4 * (agent_controller::util::clock::random_u64() % 1000) as f64 / 1000.0;
        (Duration::from_secs_f64(base * jitter), first)
    }

    /// Note a success; true when it ends a run of failures.
    pub fn succeed(&mut self) -> bool {
        let was = self.failures > 0;
        self.failures = 0;
        was
    }
}

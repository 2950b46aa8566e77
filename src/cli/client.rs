//! A small REST client for the controller's API, shared by the console and the MCP server.
//!
//! The daemon is found via `--api`, else `AGENT_CONTROLLER_API`, else `http://127.0.0.1:5900`;
//! the token via `--token`, else `AGENT_CONTROLLER_TOKEN`; an `https://` daemon signed by a private
//! CA via `--ca-file`, else `AGENT_CONTROLLER_CA_FILE`. A daemon that is not there is its own
//! error, so callers can say where they looked and how to start one.

use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_API: &str = "http://127.0.0.1:5900";

/// A session id or file name as one URL path segment.
pub use crate::util::percent_encode as path_segment;

/// Whether a session object from the API is still going.
pub fn is_active(session: &Value) -> bool {
    serde_json::from_value::<crate::protocol::Status>(session["status"].clone()).is_ok_and(|s| s.is_active())
}

pub struct ApiClient {
    pub base: String,
    token: Option<String>,
    agent: ureq::Agent,
    stream_agent: ureq::Agent,
}

#[derive(Debug)]
pub enum ClientError {
    /// Nothing answers at the address.
    Unreachable {
        base: String,
        why: String,
    },
    /// The API answered with an error.
    Api {
        status: u16,
        code: String,
        message: String,
    },
    Other(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Unreachable { base, why } => write!(
                f,
                "no controller at {base} ({why}). Start one with `agent-controller serve` (or `make run`), or point --api / AGENT_CONTROLLER_API at it."
            ),
            ClientError::Api { status, message, .. } => write!(f, "{message} (HTTP {status})"),
            ClientError::Other(m) => f.write_str(m),
        }
    }
}

/// The `{error, code}` body of a failed response.
fn api_error(status: u16, resp: &mut ureq::http::Response<ureq::Body>) -> ClientError {
    let text = resp.body_mut().with_config().limit(1 << 20).read_to_string().unwrap_or_default();
    api_error_from(status, &serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn api_error_from(status: u16, body: &Value) -> ClientError {
    ClientError::Api {
        status,
        code: body["code"].as_str().unwrap_or("").into(),
        message: body["error"].as_str().unwrap_or("error").into(),
    }
}

impl ApiClient {
    /// Err when the CA file cannot be used.
    pub fn new(
        api: Option<String>,
        token: Option<String>,
        ca_file: Option<PathBuf>,
    ) -> Result<ApiClient, crate::util::tls::CaFileError> {
        let base = api
            .or_else(|| std::env::var("AGENT_CONTROLLER_API").ok())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API.to_string())
            .trim_end_matches('/')
            .to_string();
        let token = token.or_else(|| std::env::var("AGENT_CONTROLLER_TOKEN").ok()).filter(|t| !t.is_empty());
        let ca_file = ca_file.or_else(|| std::env::var_os("AGENT_CONTROLLER_CA_FILE").map(PathBuf::from));
        let tls = crate::util::tls::client_tls(ca_file.as_deref().filter(|p| !p.as_os_str().is_empty()))?;
        let build = |global: Option<Duration>| -> ureq::Agent {
            ureq::Agent::config_builder()
                .tls_config(tls.clone())
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_secs(5)))
                .timeout_global(global)
                .build()
                .into()
        };
        Ok(ApiClient { base, token, agent: build(Some(Duration::from_secs(90))), stream_agent: build(None) })
    }

    fn fail(&self, e: ureq::Error) -> ClientError {
        if let Some(why) = crate::util::tls::untrusted(&e) {
            return ClientError::Other(format!("{}: {why}", self.base));
        }
        let why = match &e {
            ureq::Error::Io(io) => format!("{}", io.kind()),
            ureq::Error::ConnectionFailed => "connection refused".into(),
            ureq::Error::HostNotFound => "host not found".into(),
            ureq::Error::Timeout(_) => "timed out".into(),
            other => other.to_string(),
        };
        ClientError::Unreachable { base: self.base.clone(), why }
    }

    fn finish(&self, result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Value, ClientError> {
        let mut resp = result.map_err(|e| self.fail(e))?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| self.fail(e))?;
        let v: Value = serde_json::from_str(&text).map_err(|_| {
            ClientError::Other(format!("{} answered HTTP {status} with something that is not JSON", self.base))
        })?;
        if (200..300).contains(&status) { Ok(v) } else { Err(api_error_from(status, &v)) }
    }

    fn auth<B>(&self, rb: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => rb.header("Authorization", format!("Bearer {t}")),
            None => rb,
        }
    }

    pub fn get(&self, path: &str) -> Result<Value, ClientError> {
        self.finish(self.auth(self.agent.get(format!("{}{path}", self.base))).call())
    }

    pub fn post(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        self.finish(self.auth(self.agent.post(format!("{}{path}", self.base))).send_json(body))
    }

    /// A POST whose answer may take longer than the usual 90 s: the daemon bounds the wait
    /// (`POST /act` by the tool's own timeout).
    pub fn post_waiting(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        self.finish(self.auth(self.stream_agent.post(format!("{}{path}", self.base))).send_json(body))
    }

    pub fn delete(&self, path: &str) -> Result<Value, ClientError> {
        self.finish(self.auth(self.agent.delete(format!("{}{path}", self.base))).call())
    }

    /// `PUT` a file's bytes, streamed from disk with its length (an input of a session).
    pub fn put_file(&self, path: &str, file: &Path) -> Result<Value, ClientError> {
        let opened = std::fs::File::open(file).and_then(|f| Ok((f.metadata()?.len(), f)));
        let (length, f) = opened.map_err(|e| ClientError::Other(format!("cannot read {}: {e}", file.display())))?;
        let rb = self
            .auth(self.stream_agent.put(format!("{}{path}", self.base)))
            .header("Content-Length", length.to_string());
        self.finish(rb.send(ureq::SendBody::from_owned_reader(f)))
    }

    /// The raw bytes of a file (bounded) and its content type.
    pub fn get_bytes(&self, path: &str, limit: u64) -> Result<(Vec<u8>, String), ClientError> {
        let mut resp =
            self.auth(self.stream_agent.get(format!("{}{path}", self.base))).call().map_err(|e| self.fail(e))?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(api_error(status, &mut resp));
        }
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = resp.body_mut().with_config().limit(limit).read_to_vec().map_err(|e| self.fail(e))?;
        Ok((bytes, ct))
    }

    /// Stream a file to `dest` (through a temp file, renamed when complete). Returns its size.
    pub fn download(&self, path: &str, dest: &Path) -> Result<u64, ClientError> {
        self.download_with(path, dest, &mut |_, _| {})
    }

    /// `download`, telling `progress` (bytes so far, the total when the server says it) after
    /// every chunk.
    pub fn download_with(
        &self,
        path: &str,
        dest: &Path,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<u64, ClientError> {
        let mut resp =
            self.auth(self.stream_agent.get(format!("{}{path}", self.base))).call().map_err(|e| self.fail(e))?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(api_error(status, &mut resp));
        }
        let total = resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
        let tmp =
            dest.with_file_name(format!(".{}.part", dest.file_name().and_then(|n| n.to_str()).unwrap_or("download")));
        let result = (|| -> std::io::Result<u64> {
            // A fresh file, never through a symlink someone left at the temp name.
            let _ = std::fs::remove_file(&tmp);
            let mut file =
                std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
            let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
            let mut buf = vec![0u8; 256 * 1024];
            let mut written = 0u64;
            loop {
                let n = reader.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                file.write_all(&buf[..n])?;
                written += n as u64;
                progress(written, total);
            }
            file.sync_all()?;
            std::fs::rename(&tmp, dest)?;
            Ok(written)
        })();
        result.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ClientError::Other(format!("download to {} failed: {e}", dest.display()))
        })
    }
}

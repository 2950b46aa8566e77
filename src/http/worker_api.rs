//! The worker server's routes: register, long-poll for a command, post a result, a busy
//! worker's heartbeat, upload a file, fetch one of its session's files, health.
//!
//! Identity (`hub::Refusal`): a request naming `worker_id` carries its secret in
//! `X-Worker-Secret`; seed-compatible bare requests (no `worker_id`) are recognised by address
//! while `server.legacy_workers` is on, and reach only workers that registered bare. The
//! long poll is parked (see `wait::park`), so it holds no handler thread. Uploads stream from the
//! socket into a staged file with the session's limits applied as bytes arrive.

use crate::config::Config;
use crate::error::ApiError;
use crate::http::{self, Incoming, Reply, query_param, split_url};
use crate::hub::{Refusal, Worker, WorkerHub};
use crate::protocol::{
    CommandResult, FileKind, LogKind, RegisterRequest, RegisterResponse, UploadResponse, WorkerBrowserSettings,
    WorkerSettings,
};
use crate::session::{self, SessionManager};
use crate::store::{StageError, StagedFile};
use multipart2::server::Multipart;
use serde_json::json;
use std::io::Read;
use std::net::IpAddr;
use std::sync::Arc;
use tiny_http::{Method, Request};

const REGISTER_LIMIT: usize = 64 * 1024;
const RESULT_LIMIT: usize = 32 * 1024 * 1024;
const FIELD_LIMIT: u64 = 4096;

/// The worker's requests of every agent step, which the front may serve itself.
#[derive(Clone, Copy, PartialEq)]
enum Hot {
    Poll,
    Result,
    Heartbeat,
}

impl Hot {
    fn of(method: &str, segments: &[String]) -> Option<Hot> {
        match (method, segments) {
            ("GET", [s]) if s == "command" => Some(Hot::Poll),
            ("POST", [s]) if s == "result" => Some(Hot::Result),
            ("POST", [s]) if s == "heartbeat" => Some(Hot::Heartbeat),
            _ => None,
        }
    }
}

pub struct WorkerApi {
    pub config: Arc<Config>,
    pub hub: Arc<WorkerHub>,
    pub sessions: Arc<SessionManager>,
}

impl WorkerApi {
    pub fn handle(&self, mut request: Request) {
        http::test_trigger(&request);
        let result = self.route(&mut request);
        http::finish(request, result);
    }

    fn route(&self, request: &mut Request) -> Result<Reply, ApiError> {
        let (segments, query) = split_url(request.url());
        if segments != ["health"] {
            http::check_bearer(request, self.config.server.worker_token.expose())?;
        }
        if let Some(hot) = Hot::of(request.method().as_str(), &segments) {
            let body = if hot == Hot::Result { http::read_body(request, RESULT_LIMIT)? } else { Vec::new() };
            return self.hot(hot, request, &query, body);
        }
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let addr = http::peer_ip(request);
        let secret = http::header_value(request, SECRET_HEADER).map(|s| s.trim().to_string());
        match (request.method(), segs.as_slice()) {
            (Method::Get | Method::Head, ["health"]) => Ok(Reply::json(200, &json!({"status": "ok"}))),
            (Method::Post, ["register"]) => self.register(request, addr, secret.as_deref()),
            (Method::Post, ["upload"]) => {
                let worker = self.worker(query_param(&query, "worker_id"), secret.as_deref(), addr)?;
                self.upload(request, worker)
            }
            (Method::Get | Method::Head, ["files", name]) => {
                let worker = self.worker(query_param(&query, "worker_id"), secret.as_deref(), addr)?;
                self.session_file(&worker, name)
            }
            (_, ["health" | "register" | "command" | "heartbeat" | "result" | "upload"] | ["files", _]) => {
                Err(ApiError::MethodNotAllowed(format!(
                    "{} is not allowed on {}",
                    request.method(),
                    request.url().escape_debug()
                )))
            }
            _ => Err(ApiError::NotFound(format!("no route for {} {}", request.method(), request.url().escape_debug()))),
        }
    }

    /// Poll, result, heartbeat, the token checked: who the worker is, then the route.
    fn hot(
        &self,
        hot: Hot,
        request: &dyn Incoming,
        query: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Reply, ApiError> {
        let secret = request.header(SECRET_HEADER).map(str::trim);
        let worker = self.worker(query_param(query, "worker_id"), secret, request.peer())?;
        match hot {
            Hot::Poll => {
                let hub = Arc::clone(&self.hub);
                Ok(Reply::Park(Box::new(move |respond| hub.poll(&worker, respond))))
            }
            Hot::Heartbeat => {
                self.hub.heartbeat(&worker);
                let every = self.hub.heartbeat_interval().as_secs();
                Ok(Reply::json(200, &json!({"success": true, "interval_s": every})))
            }
            Hot::Result => {
                let result: CommandResult = http::parse_worker_json(&body)?;
                // Its bytes go before the session works on the result.
                drop(body);
                let id = result.id.clone();
                if self.hub.post_result(&worker, result) {
                    return Ok(Reply::json(200, &json!({"success": true})));
                }
                log::debug!("worker {}: ignored a result for {id}, which nobody waits for", worker.id);
                let ignored = format!("no command {id} is waiting for a result");
                Ok(Reply::json(200, &json!({"success": true, "ignored": ignored})))
            }
        }
    }

    fn worker(
        &self,
        worker_id: Option<&str>,
        secret: Option<&str>,
        addr: Option<IpAddr>,
    ) -> Result<Arc<Worker>, ApiError> {
        self.hub.identify(worker_id, secret, addr).map_err(refusal)
    }

    fn register(&self, request: &mut Request, addr: Option<IpAddr>, proof: Option<&str>) -> Result<Reply, ApiError> {
        let body: RegisterRequest = http::read_worker_json(request, REGISTER_LIMIT)?;
        check_register(&body)?;
        let (worker, worker_secret) = self.hub.register(&body, addr, proof).map_err(refusal)?;
        let c = &self.config;
        Ok(Reply::json(
            200,
            &RegisterResponse {
                success: true,
                message: "registered".into(),
                worker_id: worker.id.clone(),
                worker_secret,
                config: WorkerSettings {
                    browser: WorkerBrowserSettings {
                        headless: c.browser.headless,
                        viewport_width: c.browser.viewport_width,
                        viewport_height: c.browser.viewport_height,
                        dialogs: c.browser.dialogs,
                    },
                    click_delay: c.exploration.click_delay,
                    screenshot_delay: c.exploration.screenshot_delay,
                },
            },
        ))
    }

    /// `POST /upload` (multipart: session_id, filename, file, command_id).
    fn upload(&self, request: &mut Request, worker: Arc<Worker>) -> Result<Reply, ApiError> {
        self.hub.touch(&worker);
        let serving = self.hub.serving(&worker).ok_or_else(|| {
            ApiError::Conflict(format!("worker {} is not serving a session; nothing to upload to", worker.hostname))
        })?;
        let session = self.sessions.get(&serving)?;
        let boundary = multipart_boundary(http::header_value(request, "Content-Type"))?;

        let (allowance, per_file_binds) = session.upload_allowance()?;
        // A declared length far beyond the allowance is refused before reading a byte.
        if request.body_length().is_some_and(|n| n as u64 > allowance.saturating_add(64 * 1024)) {
            return Err(session::stage_error(StageError::Limit, per_file_binds, &self.config, &session.id).into());
        }

        let parts = read_upload_parts(
            request.as_reader(),
            boundary,
            allowance,
            || session.stage().map_err(ApiError::from),
            |e| session::stage_error(e, per_file_binds, &self.config, &session.id).into(),
        )?;
        let UploadParts { claimed_session, filename, part_filename, staged } = parts;
        // Required: a late upload from a session the worker no longer serves must not land in
        // the next one.
        match claimed_session.filter(|c| !c.is_empty()) {
            None => return Err(ApiError::BadRequest("the multipart body has no `session_id` field".into())),
            Some(claimed) if claimed != serving => {
                return Err(ApiError::Forbidden(format!(
                    "worker {} serves session {serving}, not {claimed}",
                    worker.hostname
                )));
            }
            Some(_) => {}
        }
        let staged = staged.ok_or_else(|| ApiError::BadRequest("the multipart body has no `file` part".into()))?;
        let wanted = filename.filter(|f| !f.trim().is_empty()).or(part_filename).unwrap_or_else(|| "download".into());
        let bytes = staged.written();
        let entry = session.commit_file(staged, &wanted, FileKind::Download)?;
        crate::util::metrics::uploaded(bytes);
        session.log(
            LogKind::System,
            &if entry.duplicate {
                format!("worker uploaded a file the session already holds as {}: not stored again", entry.filename)
            } else {
                format!("worker uploaded {} ({} KB)", entry.filename, entry.size_kb)
            },
            Some(json!({"filename": entry.filename, "size_kb": entry.size_kb})),
        );
        Ok(Reply::json(200, &UploadResponse { success: true, stored_as: entry.filename, size_kb: entry.size_kb }))
    }
}

impl WorkerApi {
    /// `GET /files/NAME`: one file of the session the worker serves (an input or one it
    /// produced), streamed, for `browser_upload_file`; only that session's, by name.
    fn session_file(&self, worker: &Arc<Worker>, name: &str) -> Result<Reply, ApiError> {
        self.hub.touch(worker);
        let serving = self.hub.serving(worker).ok_or_else(|| {
            ApiError::Conflict(format!("worker {} is not serving a session; it has no files", worker.hostname))
        })?;
        let (path, _) = self.sessions.get(&serving)?.file_for_upload(name)?;
        let opened = std::fs::File::open(&path).and_then(|f| Ok((f.metadata()?.len(), f)));
        let (length, file) = opened.map_err(|e| ApiError::NotFound(format!("file {name:?} cannot be opened: {e}")))?;
        Ok(Reply::Stream(http::Stream {
            headers: vec![http::header("Content-Type", "application/octet-stream")],
            length: Some(length),
            write: Box::new(move |out| match std::io::copy(&mut file.take(length), out)? {
                n if n == length => Ok(()),
                n => Err(std::io::Error::other(format!("the file shrank to {n} of {length} bytes while being sent"))),
            }),
        }))
    }
}

/// What a registration may say: the hostname and capabilities reach the daemon's log and
/// `/workers`, so short printable text only (no newlines).
pub fn check_register(body: &RegisterRequest) -> Result<(), ApiError> {
    // Controls are looked for in the whole name: it is stored as sent, not trimmed.
    let hostname = body.hostname.trim();
    if hostname.is_empty() || hostname.len() > 255 || body.hostname.chars().any(char::is_control) {
        return Err(ApiError::BadRequest("`hostname` must be 1-255 printable characters".into()));
    }
    let caps = body.capabilities.as_deref().unwrap_or_default();
    let word = |c: &String| {
        (1..=64).contains(&c.len()) && c.chars().all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
    };
    if caps.len() > 16 || !caps.iter().all(word) {
        return Err(ApiError::BadRequest(
            "`capabilities` must be at most 16 words of letters, digits, '-', '_' or '.'".into(),
        ));
    }
    Ok(())
}

/// The header carrying a worker's secret.
pub const SECRET_HEADER: &str = "X-Worker-Secret";

/// The hub's refusal as the status a worker acts on: 404 re-registers, 403 is a wrong secret
/// (or a bare request where none is allowed), 409 a hostname held by another worker.
fn refusal(r: Refusal) -> ApiError {
    match r {
        Refusal::Unknown(m) => ApiError::NotFound(m),
        Refusal::WrongSecret(m) | Refusal::BareRefused(m) => ApiError::Forbidden(m),
        Refusal::HostnameTaken(m) => ApiError::Conflict(m),
        Refusal::Full(m) => ApiError::Unavailable(m),
    }
}

/// The boundary of a `multipart/form-data` body, from its `Content-Type`.
pub fn multipart_boundary(content_type: Option<&str>) -> Result<String, ApiError> {
    content_type
        .and_then(|ct| {
            let (kind, params) = ct.split_once(';')?;
            if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
                return None;
            }
            params.split(';').find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                let boundary = v.trim_matches('"');
                // An empty one (`boundary=""`, `boundary=;`) would match no delimiter line.
                (k.eq_ignore_ascii_case("boundary") && !boundary.is_empty()).then(|| boundary.to_string())
            })
        })
        .ok_or_else(|| ApiError::BadRequest("expected a multipart/form-data body with a boundary".into()))
}

/// What an upload's parts said, the file already staged (within `allowance`).
#[derive(Default)]
pub struct UploadParts {
    pub claimed_session: Option<String>,
    pub filename: Option<String>,
    pub part_filename: Option<String>,
    pub staged: Option<StagedFile>,
}

/// Read a multipart upload from `body`: the fields, and the `file` part streamed into a file
/// from `stage`, at most `allowance` bytes (unknown parts are read past within it too).
pub fn read_upload_parts(
    body: impl Read,
    boundary: String,
    allowance: u64,
    stage: impl Fn() -> Result<StagedFile, ApiError>,
    stage_error: impl Fn(StageError) -> ApiError,
) -> Result<UploadParts, ApiError> {
    let mut multipart = Multipart::with_body(body, boundary);
    let mut parts = UploadParts::default();
    loop {
        let field = multipart.read_entry().map_err(|e| malformed(&e))?;
        let Some(mut field) = field else { break };
        let name = field.headers.name.to_string();
        match name.as_str() {
            "file" => {
                if parts.staged.is_some() {
                    return Err(ApiError::BadRequest("more than one `file` part".into()));
                }
                parts.part_filename = field.headers.filename.clone();
                let mut file = stage()?;
                file.copy_from(&mut field.data, allowance).map_err(&stage_error)?;
                parts.staged = Some(file);
            }
            "session_id" | "filename" | "command_id" => {
                let mut value = String::new();
                field
                    .data
                    .by_ref()
                    .take(FIELD_LIMIT)
                    .read_to_string(&mut value)
                    .map_err(|e| ApiError::BadRequest(format!("bad `{name}` field: {e}")))?;
                match name.as_str() {
                    "session_id" => parts.claimed_session = Some(value.trim().to_string()),
                    "filename" => parts.filename = Some(value),
                    _ => {}
                }
            }
            _ => {
                // Unknown parts are read past, bounded by the same allowance.
                std::io::copy(&mut field.data.by_ref().take(allowance), &mut std::io::sink())
                    .map_err(|e| malformed(&e))?;
            }
        }
    }
    Ok(parts)
}

/// A multipart error in words of our own: multipart2 0.19's header errors format themselves
/// recursively (`Display` calls `to_string` on itself), a stack overflow that aborts the whole
/// process, so their text is never shown; the kind says enough.
fn malformed(e: &std::io::Error) -> ApiError {
    let why = match e.kind() {
        std::io::ErrorKind::InvalidData => {
            "a part's headers are invalid (each part needs `Content-Disposition: form-data; name=\"…\"`)".to_string()
        }
        std::io::ErrorKind::UnexpectedEof => "it ends before its closing boundary".to_string(),
        kind => kind.to_string(),
    };
    ApiError::BadRequest(format!("malformed multipart body: {why}"))
}

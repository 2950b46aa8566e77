//! The API server's routes : sessions, logs, files (and the inputs a person hands over), a
//! run's export, confirmations, workers and their browser profiles, health, and the web page's
//! files (`web/`).
//!
//! Each handler returns `Result<Reply, ApiError>`; `http::finish` turns that into exactly one
//! response. Bodies are JSON, capped at 1 MiB. Auth is a bearer token checked in constant
//! time on every route but `/health` and the page's static files (`web::is_public`).

use super::body::percent_encode;
use super::{metrics, openapi, web};
use crate::config::Config;
use crate::error::ApiError;
use crate::export;
use crate::http::{self, Reply, query_param, split_url};
use crate::hub::WorkerHub;
use crate::protocol::takeover::{ActRequest, ResumeRequest};
use crate::protocol::{AnswerRequest, ConfirmationAnswer, CreateSessionRequest, Status};
use crate::schedule::Scheduler;
use crate::session::{LOG_WAIT_MAX, Session, SessionManager, check_act};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Method, Request};

pub const JSON_LIMIT: usize = 1024 * 1024;

pub struct Api {
    pub config: Arc<Config>,
    pub sessions: Arc<SessionManager>,
    pub hub: Arc<WorkerHub>,
    pub schedules: Arc<Scheduler>,
}

impl Api {
    pub fn handle(&self, mut request: Request) {
        http::test_trigger(&request);
        let result = self.route(&mut request);
        http::finish(request, result);
    }

    fn route(&self, request: &mut Request) -> Result<Reply, ApiError> {
        let (segments, query) = split_url(request.url());
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let method = match request.method() {
            Method::Head => Method::Get,
            m => m.clone(),
        };
        if segs != ["health"] && !web::is_public(&segs) {
            http::check_bearer(request, self.config.server.api_token.expose())?;
        }
        use Method::{Delete, Get, Post, Put};
        match (&method, segs.as_slice()) {
            (Get, ["health"]) => Ok(self.health()),
            (Get, []) => web::asset("index.html", request),
            (Get, ["web", name]) => web::asset(name, request),
            (Get, ["llms"]) => Ok(web::llms(&self.config)),
            (Get, ["openapi.json"]) => Ok(Reply::json(200, &openapi::document())),
            (Get, ["metrics"]) => Ok(metrics::reply(&self.sessions, &self.hub, &self.schedules.counts())),
            (Get, ["workers"]) => Ok(Reply::json(200, &self.hub.workers())),
            (Post, ["sessions"]) => self.create_session(request),
            (Get, ["sessions"]) => Ok(self.list_sessions(&query)),
            (Get, ["sessions", id]) => Ok(Reply::json(200, &self.sessions.get(id)?.record())),
            (Delete, ["sessions", id]) if query_param(&query, "purge") == Some("true") => {
                self.sessions.purge(id)?;
                Ok(Reply::json(200, &json!({"purged": true})))
            }
            (Delete, ["sessions", id]) => self.stop(id, &query),
            (Get, ["sessions", id, "log"]) => self.log(id, &query),
            (Get, ["sessions", id, "report"]) => {
                Ok(Reply::json(200, &json!({"report": self.sessions.get(id)?.report()})))
            }
            (Get, ["sessions", id, "notes"]) => Ok(Reply::json(200, &self.sessions.get(id)?.notes())),
            (Get, ["sessions", id, "conversation"]) => Ok(Reply::json(200, &self.sessions.get(id)?.conversation())),
            (Get, ["sessions", id, "steps"]) => Ok(Reply::json(200, &self.sessions.get(id)?.read_steps())),
            (Get, ["sessions", id, "export"]) => self.export(&*self.sessions.get(id)?, &query),
            (Get, ["sessions", id, "files"]) => Ok(Reply::json(200, &self.sessions.get(id)?.files())),
            (Get, ["sessions", id, "files", "zip"]) => self.zip(&*self.sessions.get(id)?),
            (Get, ["sessions", id, "files", name]) => self.file(&*self.sessions.get(id)?, name, request),
            (Put, ["sessions", id, "inputs", name]) => self.put_input(id, name, request),
            (Get, ["profiles"]) => Ok(Reply::json(200, &self.hub.profiles())),
            (Delete, ["profiles", name]) => self.delete_profile(name),
            (Get, ["sessions", id, "recording"]) => self.recording(&*self.sessions.get(id)?),
            (Get, ["sessions", id, "confirmation"]) => self.confirmation(id),
            (Post, ["sessions", id, "replay"]) => self.replay(id, request),
            (Post, ["sessions", id, "confirmation"]) => self.answer_confirmation(id, request),
            (Post, ["sessions", id, "answer"]) => self.answer(id, request),
            (Post, ["sessions", id, "pause"]) => self.pause(id, request),
            (Post, ["sessions", id, "act"]) => self.act(id, request),
            (Post, ["sessions", id, "resume"]) => self.resume(id, request),
            (Post, ["schedules"]) => {
                let body: serde_json::Value = http::read_json(request, JSON_LIMIT)?;
                Ok(Reply::json(201, &self.schedules.add(body)?))
            }
            (Get, ["schedules"]) => Ok(Reply::json(200, &self.schedules.list())),
            (Get, ["schedules", name]) => Ok(Reply::json(200, &self.schedules.get(name)?)),
            (Delete, ["schedules", name]) => {
                self.schedules.delete(name)?;
                Ok(Reply::json(200, &json!({"deleted": true})))
            }
            (Post, ["schedules", name, "run"]) => Ok(Reply::json(201, &self.schedules.run_now(name)?)),
            (_, ["health" | "workers" | "sessions"])
            | (_, [] | ["llms" | "openapi.json" | "metrics"] | ["web", _])
            | (_, ["sessions", _])
            | (
                _,
                [
                    "sessions",
                    _,
                    "log" | "report" | "notes" | "steps" | "files" | "confirmation" | "answer" | "replay" | "pause"
                    | "act" | "resume" | "recording",
                ],
            )
            | (_, ["sessions", _, "files" | "inputs", _])
            | (_, ["profiles"] | ["profiles", _])
            | (_, ["schedules"] | ["schedules", _] | ["schedules", _, "run"]) => Err(ApiError::MethodNotAllowed(
                format!("{} is not allowed on {}", request.method(), request.url().escape_debug()),
            )),
            _ => Err(ApiError::NotFound(format!("no route for {} {}", request.method(), request.url().escape_debug()))),
        }
    }

    /// `PUT /sessions/:id/inputs/NAME`: 201 for a new input, 200 when it replaced one.
    fn put_input(&self, id: &str, name: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let (entry, created) = self.sessions.get(id)?.put_input(name, request.as_reader())?;
        Ok(Reply::json(if created { 201 } else { 200 }, &entry))
    }

    /// `DELETE /profiles/NAME`: its worker removes it.
    fn delete_profile(&self, name: &str) -> Result<Reply, ApiError> {
        self.hub.delete_profile(name).map_err(profile_refusal)?;
        Ok(Reply::json(200, &json!({"deleted": true})))
    }

    /// `GET /sessions`, newest first; `?schedule=NAME` keeps that schedule's runs.
    /// `DELETE /sessions/:id[?report=false]`.
    fn stop(&self, id: &str, query: &[(String, String)]) -> Result<Reply, ApiError> {
        let report = match query_param(query, "report") {
            None | Some("true") => true,
            Some("false") => false,
            Some(other) => return Err(ApiError::BadRequest(format!("report={other}: say true or false"))),
        };
        let status = self.sessions.stop(id, report)?;
        Ok(Reply::json(200, &json!({"stopped": true, "status": status})))
    }

    fn list_sessions(&self, query: &[(String, String)]) -> Reply {
        let mut list = self.sessions.list();
        if let Some(name) = query_param(query, "schedule") {
            list.retain(|s| s.schedule.as_ref().is_some_and(|m| m.name == name));
        }
        Reply::json(200, &list)
    }

    fn confirmation(&self, id: &str) -> Result<Reply, ApiError> {
        let record = self.sessions.get(id)?.record();
        Ok(match record.confirmation_pending {
            Some(c) => {
                let mut v = serde_json::to_value(&c).unwrap_or_default();
                v["pending"] = json!(true);
                Reply::json(200, &v)
            }
            None => Reply::json(200, &json!({"pending": false})),
        })
    }

    fn answer_confirmation(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let answer: ConfirmationAnswer = http::read_json(request, JSON_LIMIT)?;
        session.answer_confirmation(&answer.confirmation_id, answer.approved, answer.reason, answer.edited_command)?;
        Ok(Reply::json(200, &json!({"ok": true})))
    }

    fn answer(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let answer: AnswerRequest = http::read_json(request, JSON_LIMIT)?;
        session.answer_question(answer.question_id.as_deref(), &answer.text)?;
        Ok(Reply::json(200, &json!({"ok": true})))
    }

    /// `POST /pause` (202): the session pauses after the step in flight.
    fn pause(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let body: serde_json::Map<String, serde_json::Value> = optional_json(request)?;
        if let Some(key) = body.keys().next() {
            return Err(ApiError::BadRequest(format!("pause takes no fields (got `{}`)", key.escape_debug())));
        }
        let status = session.request_pause()?;
        Ok(Reply::json(202, &json!({"pause_requested": status != Status::Paused, "status": status})))
    }

    /// `POST /act`: one worker tool as the person, while paused; answers its result. The
    /// request is parked while the worker runs it: it holds no handler thread.
    fn act(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let body: ActRequest = http::read_json(request, JSON_LIMIT)?;
        let record = session.record();
        let tool = check_act(record.mode, record.session_type, &body.tool, &body.input)?;
        let task = &self.config.task;
        let timeout = Duration::from_secs(task.command_timeout_s.max(task.download_timeout_s) + 30);
        let act = session.start_act(tool, body.input)?;
        Ok(Reply::Park(Box::new(move |respond| session.await_act(act, respond, timeout, super::statuses::act_error))))
    }

    /// `POST /resume {note?}` (202): the model goes on, told what the person did; a session a
    /// restart interrupted goes on from its journal.
    fn resume(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let body: ResumeRequest = optional_json(request)?;
        if session.interrupted() {
            // A restart cut it off: it goes on from its journal (a note has nobody to read it yet).
            let again = self.sessions.resume_interrupted(id)?;
            return Ok(Reply::json(202, &json!({"resumed": true, "status": again.status()})));
        }
        session.resume(body.note)?;
        Ok(Reply::json(202, &json!({"resumed": true})))
    }

    fn replay(&self, id: &str, request: &mut Request) -> Result<Reply, ApiError> {
        let body: crate::protocol::replay::ReplayRequest = http::read_json(request, JSON_LIMIT)?;
        let session = self.sessions.replay(id, body)?;
        let mut value = serde_json::to_value(session.record()).unwrap_or_default();
        value["session_id"] = json!(session.id);
        Ok(Reply::json(201, &value))
    }

    fn health(&self) -> Reply {
        Reply::json(
            200,
            &json!({
                "status": "ok",
                "version": env!("CARGO_PKG_VERSION"),
                "sessions": self.sessions.status_counts(),
                "workers": self.hub.connected_count(),
                "auth": !self.config.server.api_token.is_empty(),
            }),
        )
    }

    fn create_session(&self, request: &mut Request) -> Result<Reply, ApiError> {
        let body: CreateSessionRequest = http::read_json(request, JSON_LIMIT)?;
        let new = self.sessions.validate(body)?;
        let session = self.sessions.create(new)?;
        let mut value = serde_json::to_value(session.record()).unwrap_or_default();
        value["session_id"] = json!(session.id);
        Ok(Reply::json(201, &value))
    }

    fn log(&self, id: &str, query: &[(String, String)]) -> Result<Reply, ApiError> {
        let session = self.sessions.get(id)?;
        let number = |name: &str| -> Result<u64, ApiError> {
            match query_param(query, name) {
                None | Some("") => Ok(0),
                Some(v) => v
                    .parse::<u64>()
                    .map_err(|_| ApiError::BadRequest(format!("`{name}` must be a non-negative integer, got {v:?}"))),
            }
        };
        let after = number("after")?;
        let wait = Duration::from_secs(number("wait")?).min(LOG_WAIT_MAX);
        Ok(Reply::Park(Box::new(move |respond| session.log_long_poll(respond, after, wait))))
    }

    fn file(&self, session: &Session, name: &str, request: &Request) -> Result<Reply, ApiError> {
        let (path, size) = session.file_path(name)?;
        let etag = web::file_etag(&path, size);
        if web::fresh(request, &etag) {
            return Ok(web::not_modified(vec![http::header("ETag", &etag)]));
        }
        let opened = std::fs::File::open(&path).and_then(|f| Ok((f.metadata()?.len(), f)));
        let (length, file) = opened.map_err(|e| ApiError::NotFound(format!("file {name:?} cannot be opened: {e}")))?;
        // Streamed by us in large writes: tiny_http would copy a file 8 KiB at a time, and
        // each piece would cost the front's relay a wake-up (2.0 GB/s → 0.6–0.8 GB/s).
        Ok(Reply::Stream(http::Stream {
            headers: vec![
                http::header("Content-Type", content_type(name)),
                http::header("Content-Disposition", &content_disposition(name)),
                http::header("ETag", &etag),
                http::header("Cache-Control", "private, no-cache"),
            ],
            length: Some(length),
            write: Box::new(move |out| match std::io::copy(&mut std::io::Read::take(file, length), out)? {
                n if n == length => Ok(()),
                n => Err(std::io::Error::other(format!("the file shrank to {n} of {length} bytes while being sent"))),
            }),
        }))
    }

    /// `GET /sessions/:id/export?format=playwright|sh`: the run as a script to keep (the
    /// session's own format when none is named), an attachment.
    fn export(&self, session: &Session, query: &[(String, String)]) -> Result<Reply, ApiError> {
        let record = session.record();
        let format =
            match query_param(query, "format") {
                None | Some("") => export::Format::of(record.session_type),
                Some(name) => Some(export::Format::parse(name).ok_or_else(|| {
                    ApiError::BadRequest(format!("format={name}: say one of {}", export::Format::NAMES))
                })?),
            };
        let format = format.ok_or_else(|| ApiError::BadRequest("a desktop session has no script export".into()))?;
        let steps = session.read_steps();
        let status = json!(record.status);
        let run = export::Run {
            id: &record.session_id,
            kind: record.session_type,
            target: &record.target,
            instruction: record.instruction.as_deref(),
            status: status.as_str().unwrap_or(""),
            created_at: &record.created_at,
            steps: &steps,
        };
        let text = export::script(format, &run).map_err(|e| ApiError::BadRequest(e.to_string()))?.into_bytes();
        Ok(Reply::Stream(http::Stream {
            headers: vec![
                http::header("Content-Type", format.content_type()),
                http::header("Content-Disposition", &content_disposition(&format.file_name(&record.session_id))),
                http::header("Cache-Control", "private, no-cache"),
            ],
            length: Some(text.len() as u64),
            write: Box::new(move |out| out.write_all(&text)),
        }))
    }

    /// `GET /sessions/:id/recording`: the animated GIF, put together now from the frames.
    fn recording(&self, session: &Session) -> Result<Reply, ApiError> {
        let gif = session.recording_gif()?;
        let name = format!("{}.gif", session.id);
        Ok(Reply::Stream(http::Stream {
            headers: vec![
                http::header("Content-Type", "image/gif"),
                http::header("Content-Disposition", &content_disposition(&name)),
                http::header("Cache-Control", "private, no-cache"),
            ],
            length: Some(gif.len() as u64),
            write: Box::new(move |out| out.write_all(&gif)),
        }))
    }

    /// Stream a zip straight onto the connection; nothing is built in memory.
    fn zip(&self, session: &Session) -> Result<Reply, ApiError> {
        let files = session.zip_listing();
        Ok(Reply::Stream(http::Stream {
            headers: vec![
                http::header("Content-Type", "application/zip"),
                http::header("Content-Disposition", &content_disposition(&format!("{}.zip", session.id))),
            ],
            length: None,
            write: Box::new(move |out| crate::store::write_zip(&files, out).map_err(std::io::Error::other)),
        }))
    }
}

/// Why a browser profile was not deleted, as its status.
fn profile_refusal(r: crate::hub::ProfileRefusal) -> ApiError {
    use crate::hub::ProfileRefusal::*;
    match r {
        BadName(m) => ApiError::BadRequest(m),
        Unknown(m) => ApiError::NotFound(m),
        InUse(m) => ApiError::Conflict(m),
        Away(m) => ApiError::Unavailable(m),
        Failed(m) => ApiError::Internal(m),
    }
}

/// `attachment` with an ASCII fallback and the exact name in RFC 5987 form.
/// A JSON body that may be left out (an empty body is the default).
fn optional_json<T: serde::de::DeserializeOwned + Default>(request: &mut Request) -> Result<T, ApiError> {
    let body = http::read_body(request, JSON_LIMIT)?;
    if body.iter().all(u8::is_ascii_whitespace) { Ok(T::default()) } else { http::parse_json(&body) }
}

fn content_disposition(name: &str) -> String {
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{}", percent_encode(name))
}

fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "csv" => "text/csv; charset=utf-8",
        "txt" | "log" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "html" | "htm" => "text/html; charset=utf-8",
        "json" => "application/json",
        "xml" => "application/xml",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        _ => "application/octet-stream",
    }
}

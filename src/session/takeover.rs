//! A person takes over: the pause, their acts, the resume.
//!
//! `POST /pause` only marks the session (`pause_requested`); its thread pauses at the next
//! turn, after the step in flight, and waits in status `paused` on the session's Condvar. An
//! act (`POST /act`) is handed to that thread, which runs it on the session's worker; the
//! request meanwhile is parked in the `Parker` (no thread waits for it) and answered once: by
//! the result, by a stop or the session's end (saying whether the act had started), by the
//! pause ending before the act was taken, or by its deadline (unavailable; an act not yet taken then
//! never runs). One act at a time, and only a tool the session's mode offers. `POST /resume`
//! (or a stop, or `task.takeover_timeout_s`) ends the pause. Nothing here calls a model or a
//! worker: the agent does, on the session's thread, so one thread drives the worker as before.

use super::error::SessionError;
use super::{Session, snapshot_record};
use crate::protocol::tools::{Runs, Tool};
use crate::protocol::{LogKind, Mode, SessionType, Status};
use crate::util::schema;
use crate::wait::park::{ParkKey, Responder};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How an act's error becomes its request's status and body (the HTTP layer's mapping).
pub type Render = fn(&SessionError) -> (u16, Vec<u8>);

/// Where the takeover handshake stands (under the session's `state` lock).
#[derive(Debug, Default)]
pub(super) struct Handover {
    /// The act a person asked for, not yet taken by the session's thread.
    act: Option<Act>,
    /// The act taken and running.
    running: Option<u64>,
    /// The result of act number `.0`, for its request when it has not parked yet.
    done: Option<(u64, Value)>,
    /// The request of act number `.0`, parked until its result, and how its error is answered.
    waiter: Option<(u64, ParkKey, Render)>,
    acts: u64,
    /// `POST /resume` came, with this note.
    resume: Option<Option<String>>,
}

/// One tool a person runs while the session is paused.
#[derive(Debug, Clone)]
pub struct Act {
    pub id: u64,
    pub tool: Tool,
    pub input: Value,
}

/// What ended (or interrupted) a pause's wait.
#[derive(Debug)]
pub enum PauseEvent {
    Act(Act),
    Resumed(Option<String>),
    TimedOut,
    Stopped,
}

/// The tool a person may run in a session of this mode and type, with its input checked: any
/// of the worker tools the mode offers (an exploration's person does not download either), and
/// the browser's click also at `{x, y}` in screenshot pixels.
pub fn check_act(mode: Mode, session_type: SessionType, name: &str, input: &Value) -> Result<Tool, SessionError> {
    let bad = |m: String| Err(SessionError::Invalid(m));
    let Some(tool) = Tool::from_name(name) else {
        return bad(format!("unknown tool {name:?}"));
    };
    if tool.spec().runs != Runs::Target(session_type) {
        return bad(format!(
            "{name} is not a {} tool of this session: a person acts only through the session's worker tools",
            session_type.capability()
        ));
    }
    if !tool.spec().sets.contains(mode, session_type) {
        let mode = match mode {
            Mode::Explore => "an exploration",
            Mode::Task => "a task",
        };
        return bad(format!("{name} is not offered in {mode}: a person acts with the session's own tools"));
    }
    if !input.is_object() {
        return bad("`input` must be a JSON object".into());
    }
    let at_point = tool == Tool::BrowserClick && input.get("selector").is_none();
    let checked = if at_point {
        schema::validate(&click_at_schema(), input)
    } else {
        schema::validate(&tool.spec().input_schema.to_value(), input)
    };
    checked.map_err(|e| SessionError::Invalid(format!("invalid input for {name}: {e}")))?;
    Ok(tool)
}

/// Act `id`'s answer if it is known now: its result, or a conflict once it is neither waiting nor
/// running (the pause ended first).
fn settled(handover: &mut Handover, id: u64, session: &str) -> Option<Result<Value, SessionError>> {
    match &handover.done {
        Some((done, _)) if *done == id => handover.done.take().map(|(_, r)| Ok(r)),
        _ if handover.running != Some(id) && handover.act.as_ref().is_none_or(|a| a.id != id) => {
            Some(Err(SessionError::Conflict(format!("session {session} was no longer paused when the act came"))))
        }
        _ => None,
    }
}

/// Answer an act's request: 200 with its result, or the error as `render` words it.
fn send_act(respond: Responder, answer: Result<Value, SessionError>, render: Render) {
    match answer {
        Ok(result) => respond(200, serde_json::to_vec(&result).unwrap_or_default()),
        Err(err) => {
            let (status, body) = render(&err);
            respond(status, body)
        }
    }
}

/// `browser_click {x, y}`: a point on the screenshot, for a person clicking on the picture.
fn click_at_schema() -> Value {
    json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]})
}

impl Session {
    /// `POST /pause`: the session pauses after the step in flight. Asking twice is no error.
    pub fn request_pause(&self) -> Result<Status, SessionError> {
        let mut state = self.lock();
        let status = state.record.status;
        if !status.is_active() {
            return Err(SessionError::Conflict(format!("session {} has ended ({})", self.id, status.as_str())));
        }
        if status != Status::Paused && !state.record.pause_requested {
            state.record.pause_requested = true;
            drop(state);
            self.log(LogKind::System, "a person asked to take over: the session pauses after the step in flight", None);
        }
        Ok(status)
    }

    /// Whether the session's thread should pause before its next model call.
    pub(super) fn pause_pending(&self) -> bool {
        self.lock().record.pause_requested
    }

    /// The session's thread: now `paused` (`reason` when the model asked for it).
    pub(super) fn enter_pause(&self, reason: Option<&str>) -> bool {
        // Scrubbed before the state lock: the vault's lock is never taken under it.
        let reason = reason.map(|r| self.vault().scrub(r));
        let mut state = self.lock();
        if self.stop_requested() || !state.record.status.is_active() {
            return false;
        }
        state.record.pause_requested = false;
        state.record.takeover_requested = reason.clone();
        state.record.status = Status::Paused;
        state.handover = Handover { acts: state.handover.acts, ..Handover::default() };
        self.unlock_and_save(state);
        let text = match reason {
            Some(reason) => format!("paused: the model asks a person to take over ({reason})"),
            None => "paused: waiting for the person".to_string(),
        };
        self.log(LogKind::System, &text, None);
        true
    }

    /// The session's thread, paused: the next act, the resume, a stop or the deadline.
    pub(super) fn next_pause_event(&self, deadline: Instant) -> PauseEvent {
        let wait = deadline.saturating_duration_since(Instant::now());
        let parker = &self.parker;
        let (mut state, got) = self.wait_for(wait, |s| match s.handover.act.take() {
            // Its request was answered at its deadline: the person was told, so it never runs.
            Some(_) if s.handover.waiter.is_some_and(|(_, key, _)| !parker.contains(key)) => {
                s.handover.waiter = None;
                None
            }
            Some(act) => {
                s.handover.running = Some(act.id);
                Some(PauseEvent::Act(act))
            }
            None => s.handover.resume.take().map(PauseEvent::Resumed),
        });
        match got {
            Some(event) => event,
            None if self.stop_requested() => PauseEvent::Stopped,
            None => {
                state.handover.act = None;
                PauseEvent::TimedOut
            }
        }
    }

    /// The session's thread: act `id` ran; its result goes to the request parked for it (or
    /// waits for it to park).
    /// After a stop the request is told the stop, not the result its abandoned command got.
    pub(super) fn act_done(&self, id: u64, result: Value) {
        let mut state = self.lock();
        // The stop came while the worker ran it, and the session's thread answers first.
        let answer = match self.stop_requested() || result["stopped"] == true {
            true => Err(self.stopped_act(&state.handover, id)),
            false => Ok(result),
        };
        state.handover.running = None;
        let Some((_, key, render)) = state.handover.waiter.take_if(|(waiting, ..)| *waiting == id) else {
            state.handover.done = answer.ok().map(|result| (id, result));
            return;
        };
        drop(state);
        if let Some(respond) = self.parker.take(key) {
            send_act(respond, answer, render);
        }
    }

    /// The session's thread: the pause is over (resumed, timed out); back to `running`.
    pub(super) fn leave_pause(&self) {
        let mut state = self.lock();
        state.record.takeover_requested = None;
        state.handover.resume = None;
        if state.record.status == Status::Paused {
            state.record.status = Status::Running;
        }
        // An act that came too late learns so at once.
        let late = state.handover.act.take().and_then(|act| state.handover.waiter.take_if(|(id, ..)| *id == act.id));
        self.unlock_and_save(state);
        if let Some((_, key, render)) = late {
            if let Some(respond) = self.parker.take(key) {
                let err = format!("session {} was no longer paused when the act came", self.id);
                send_act(respond, Err(SessionError::Conflict(err)), render);
            }
        }
    }

    /// `POST /act`: hand the act to the paused session; its number, for `await_act`.
    pub fn start_act(&self, tool: Tool, input: Value) -> Result<u64, SessionError> {
        let mut state = self.lock();
        if state.record.status != Status::Paused {
            return Err(SessionError::Conflict(format!(
                "session {} is not paused ({}): POST /sessions/{}/pause first",
                self.id,
                state.record.status.as_str(),
                self.id
            )));
        }
        if state.handover.act.is_some() || state.handover.running.is_some() || state.handover.waiter.is_some() {
            return Err(SessionError::Conflict("another act is running; send the next one when it answers".into()));
        }
        state.handover.acts += 1;
        let id = state.handover.acts;
        state.handover.act = Some(Act { id, tool, input });
        drop(state);
        self.changed.notify_all();
        Ok(id)
    }

    /// `POST /act`, after `start_act`: answer `respond` with act `id`'s result, or park it (no
    /// thread waits) until the session's thread hands the result over, a stop or the end of
    /// the pause settles it, or `timeout` passes (unavailable).
    pub fn await_act(&self, id: u64, respond: Responder, timeout: Duration, render: Render) {
        let mut state = self.lock();
        let answer = match settled(&mut state.handover, id, &self.id) {
            Some(answer) => Some(answer),
            None if self.stop_requested() => Some(Err(self.stopped_act(&state.handover, id))),
            None => {
                let late = SessionError::Unavailable(format!("the act did not finish within {} s", timeout.as_secs()));
                let (status, body) = render(&late);
                match self.parker.park_with(respond, timeout, status, body) {
                    Ok(key) => {
                        state.handover.waiter = Some((id, key, render));
                        return;
                    }
                    Err((respond, status, body)) => {
                        drop(state);
                        return respond(status, body);
                    }
                }
            }
        };
        drop(state);
        if let Some(answer) = answer {
            send_act(respond, answer, render);
        }
    }

    /// The act's parked request, settled by a stop or the session's end: whether its command
    /// had reached the worker.
    pub(super) fn settle_act(&self) {
        let mut state = self.lock();
        let Some((id, key, render)) = state.handover.waiter.take() else { return };
        let err = if self.stop_requested() {
            self.stopped_act(&state.handover, id)
        } else {
            SessionError::Conflict(format!("session {} ended before the act answered", self.id))
        };
        drop(state);
        if let Some(respond) = self.parker.take(key) {
            send_act(respond, Err(err), render);
        }
    }

    fn stopped_act(&self, handover: &Handover, id: u64) -> SessionError {
        if handover.running == Some(id) {
            // Taken by the session's thread: its command went to the worker, which may have
            // done it before the stop abandoned it.
            SessionError::Conflict(format!(
                "session {} was stopped while the act was running on the worker: its command was abandoned, \
                 and may or may not have taken effect",
                self.id
            ))
        } else {
            SessionError::Conflict(format!("session {} ended before the act ran", self.id))
        }
    }

    /// `POST /resume` on a paused session (or one about to pause: the request is withdrawn).
    pub fn resume(&self, note: Option<String>) -> Result<(), SessionError> {
        let mut state = self.lock();
        let note = note.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
        match state.record.status {
            Status::Paused => {
                state.handover.resume = Some(note);
                let snapshot = snapshot_record(&mut state);
                drop(state);
                self.changed.notify_all();
                self.write_record(snapshot);
                Ok(())
            }
            s if s.is_active() && state.record.pause_requested => {
                state.record.pause_requested = false;
                Ok(())
            }
            s => Err(SessionError::Conflict(format!("session {} is not paused ({})", self.id, s.as_str()))),
        }
    }
}

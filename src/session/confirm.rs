//! Asking a person: confirmations (approve, deny with a reason, approve an edited command)
//! and questions (`ask_user`, answered with free text). The session turns `confirming`, and
//! the agent's thread waits on the session's Condvar for the answer (`POST /confirmation`,
//! `POST /answer`), the timeout (`task.confirmation_timeout`: a confirmation counts as denied,
//! a question as unanswered) or a stop, whichever comes first. One question or confirmation
//! is pending at a time: the agent's thread asks them one after another.

use super::error::SessionError;
use super::{Session, SessionState, snapshot_record};
use crate::protocol::{Confirmation, LogKind, Question, Status};
use serde_json::{Value, json};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

/// How a confirmation request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmationOutcome {
    Approved,
    /// Approved without asking (`auto_confirm`).
    AutoApproved,
    Denied,
    TimedOut,
    Stopped,
}

/// A confirmation's outcome with what the person added: why they denied, or the command as
/// they edited it before approving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub outcome: ConfirmationOutcome,
    pub reason: Option<String>,
    pub edited: Option<String>,
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskOutcome {
    Answered(String),
    TimedOut,
    Stopped,
}

/// The person's answer to the pending confirmation.
#[derive(Debug, Clone, Default)]
pub(super) struct Answer {
    approved: bool,
    reason: Option<String>,
    edited: Option<String>,
}

impl Session {
    /// Ask a person; wait up to `task.confirmation_timeout` (timeout = denied).
    pub fn request_confirmation(
        &self,
        action: &str,
        description: &str,
        details: Value,
        risk_level: &str,
    ) -> ConfirmationOutcome {
        self.confirm(action, description, details, risk_level).outcome
    }

    /// Like `request_confirmation`, with the person's reason or edit.
    pub fn confirm(&self, action: &str, description: &str, details: Value, risk_level: &str) -> Verdict {
        let verdict = |outcome| Verdict { outcome, reason: None, edited: None };
        if self.lock().record.options.auto_confirm {
            let text = format!("Auto-approved: {description}");
            self.log(LogKind::Confirmation, &text, Some(json!({"action": action, "auto": true})));
            return verdict(ConfirmationOutcome::AutoApproved);
        }
        let (description, details) = {
            let vault = self.vault();
            let mut details = details;
            vault.scrub_json(&mut details);
            (vault.scrub(description), details)
        };
        let Some(id) = self.put_up(action, &description, details, risk_level) else {
            return verdict(ConfirmationOutcome::Stopped);
        };
        let timeout = Duration::from_secs(self.config.task.confirmation_timeout);
        let v = self.await_confirmation(&id, timeout);
        let text = match (v.outcome, &v.reason, &v.edited) {
            (ConfirmationOutcome::Approved, _, Some(edited)) => {
                format!("Approved, edited to `{}`: {description}", self.vault().scrub(edited))
            }
            (ConfirmationOutcome::Approved, _, None) => format!("Approved: {description}"),
            (ConfirmationOutcome::Denied, Some(reason), _) => format!("Denied ({reason}): {description}"),
            (ConfirmationOutcome::Denied, None, _) => format!("Denied: {description}"),
            (ConfirmationOutcome::TimedOut, ..) => {
                format!("No answer within {} s, treated as denied: {description}", timeout.as_secs())
            }
            (ConfirmationOutcome::Stopped, ..) => format!("Session stopped while waiting for: {description}"),
            (ConfirmationOutcome::AutoApproved, ..) => String::new(),
        };
        self.log(LogKind::Confirmation, &text, Some(json!({"confirmation_id": id})));
        v
    }

    /// Put the question up (status `confirming`); its id, or `None` when the session ended.
    fn put_up(&self, action: &str, description: &str, details: Value, risk_level: &str) -> Option<String> {
        let mut state = self.lock();
        if self.stop_requested() || !state.record.status.is_active() {
            return None;
        }
        state.confirmations_asked += 1;
        let confirmation = Confirmation {
            confirmation_id: format!("conf_{:03}", state.confirmations_asked),
            action: action.to_string(),
            description: description.to_string(),
            details,
            risk_level: risk_level.to_string(),
        };
        let id = confirmation.confirmation_id.clone();
        state.confirmation_answer = None;
        state.record.confirmation_pending = Some(confirmation.clone());
        state.record.status = Status::Confirming;
        self.unlock_and_save(state);
        self.log(
            LogKind::Confirmation,
            &format!("Awaiting confirmation ({risk_level} risk): {description}"),
            serde_json::to_value(&confirmation).ok(),
        );
        Some(id)
    }

    fn await_confirmation(&self, id: &str, timeout: Duration) -> Verdict {
        let (state, answer) = self.wait_for(timeout, |s| s.confirmation_answer.take());
        let mut state = state;
        if state.record.confirmation_pending.as_ref().is_some_and(|c| c.confirmation_id == id) {
            state.record.confirmation_pending = None;
        }
        back_to_running(&mut state);
        let stopped = self.stop_requested();
        self.unlock_and_save(state);
        match answer {
            Some(a) if a.approved => Verdict { outcome: ConfirmationOutcome::Approved, reason: None, edited: a.edited },
            // A person may type a secret anywhere: the model never reads it.
            Some(a) => {
                let reason = a.reason.map(|r| self.vault().scrub(&r));
                Verdict { outcome: ConfirmationOutcome::Denied, reason, edited: None }
            }
            None if stopped => Verdict { outcome: ConfirmationOutcome::Stopped, reason: None, edited: None },
            None => Verdict { outcome: ConfirmationOutcome::TimedOut, reason: None, edited: None },
        }
    }

    /// Wait on the session's Condvar until `take` yields, a stop, or `timeout`.
    pub(super) fn wait_for<T>(
        &self,
        timeout: Duration,
        mut take: impl FnMut(&mut SessionState) -> Option<T>,
    ) -> (MutexGuard<'_, SessionState>, Option<T>) {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if let Some(got) = take(&mut state) {
                return (state, Some(got));
            }
            let now = Instant::now();
            if self.stop_requested() || now >= deadline {
                return (state, None);
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// `POST /confirmation`: the answer for the pending question with this id. An edit is only
    /// for a confirmation that carries a command.
    pub fn answer_confirmation(
        &self,
        confirmation_id: &str,
        approved: bool,
        reason: Option<String>,
        edited_command: Option<String>,
    ) -> Result<(), SessionError> {
        let mut state = self.lock();
        match &state.record.confirmation_pending {
            None => Err(SessionError::Conflict(format!("session {} has no pending confirmation", self.id))),
            Some(c) if c.confirmation_id != confirmation_id => Err(SessionError::Conflict(format!(
                "confirmation {confirmation_id:?} is not the pending one ({:?})",
                c.confirmation_id
            ))),
            Some(c) if edited_command.is_some() && (!approved || !c.details["command"].is_string()) => Err(
                SessionError::Invalid("`edited_command` goes with `approved: true` on a command's confirmation".into()),
            ),
            Some(_) => {
                let edited = edited_command.map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
                let reason = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
                state.confirmation_answer = Some(Answer { approved, reason, edited });
                state.record.confirmation_pending = None;
                let snapshot = snapshot_record(&mut state);
                drop(state);
                self.changed.notify_all();
                self.write_record(snapshot);
                Ok(())
            }
        }
    }

    /// `ask_user`: put a question to a person and wait for the text of the answer.
    pub fn ask(&self, question: &str) -> AskOutcome {
        let question = self.vault().scrub(question);
        let mut state = self.lock();
        if self.stop_requested() || !state.record.status.is_active() {
            return AskOutcome::Stopped;
        }
        state.confirmations_asked += 1;
        let q = Question { question_id: format!("q_{:03}", state.confirmations_asked), question: question.clone() };
        state.question_answer = None;
        state.record.question_pending = Some(q.clone());
        state.record.status = Status::Confirming;
        self.unlock_and_save(state);
        self.log(LogKind::Confirmation, &format!("Question for a person: {question}"), serde_json::to_value(&q).ok());
        let timeout = Duration::from_secs(self.config.task.confirmation_timeout);
        let (mut state, answer) = self.wait_for(timeout, |s| s.question_answer.take());
        state.record.question_pending = None;
        back_to_running(&mut state);
        let stopped = self.stop_requested();
        self.unlock_and_save(state);
        let outcome = match answer {
            // The answer goes to the model: a secret a person typed into it does not.
            Some(text) => AskOutcome::Answered(self.vault().scrub(&text)),
            None if stopped => AskOutcome::Stopped,
            None => AskOutcome::TimedOut,
        };
        let text = match &outcome {
            AskOutcome::Answered(text) => format!("Answer: {text}"),
            AskOutcome::TimedOut => format!("No answer within {} s", timeout.as_secs()),
            AskOutcome::Stopped => "Session stopped while waiting for an answer".into(),
        };
        self.log(LogKind::Confirmation, &text, Some(json!({"question_id": q.question_id})));
        outcome
    }

    /// `POST /answer`: the text for the pending question (its id, when given, must match).
    pub fn answer_question(&self, question_id: Option<&str>, text: &str) -> Result<(), SessionError> {
        let mut state = self.lock();
        match &state.record.question_pending {
            None => Err(SessionError::Conflict(format!("session {} has no pending question", self.id))),
            Some(q) if question_id.is_some_and(|id| id != q.question_id) => Err(SessionError::Conflict(format!(
                "question {:?} is not the pending one ({:?})",
                question_id.unwrap_or(""),
                q.question_id
            ))),
            Some(_) => {
                state.question_answer = Some(text.to_string());
                state.record.question_pending = None;
                let snapshot = snapshot_record(&mut state);
                drop(state);
                self.changed.notify_all();
                self.write_record(snapshot);
                Ok(())
            }
        }
    }
}

fn back_to_running(state: &mut SessionState) {
    if state.record.status == Status::Confirming {
        state.record.status = Status::Running;
    }
}

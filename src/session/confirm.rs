//! Confirmations: the agent asks a person, the session turns `confirming`, and the agent's
//! thread waits on the session's Condvar for the answer (`POST /confirmation`), the timeout
//! (`task.confirmation_timeout`, counted as denied) or a stop, whichever comes first.

use super::{Session, snapshot_record};
use crate::error::ApiError;
use crate::protocol::{Confirmation, LogKind, Status};
use serde_json::{Value, json};
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

impl Session {
    /// Ask a person; wait up to `task.confirmation_timeout` (timeout = denied).
    pub fn request_confirmation(
        &self,
        action: &str,
        description: &str,
        details: Value,
        risk_level: &str,
    ) -> ConfirmationOutcome {
        if self.lock().record.options.auto_confirm {
            let text = format!("Auto-approved: {description}");
            self.log(LogKind::Confirmation, &text, Some(json!({"action": action, "auto": true})));
            return ConfirmationOutcome::AutoApproved;
        }
        let (description, details) = {
            let vault = self.vault();
            let mut details = details;
            vault.scrub_json(&mut details);
            (vault.scrub(description), details)
        };
        let Some(id) = self.ask(action, &description, details, risk_level) else {
            return ConfirmationOutcome::Stopped;
        };
        let timeout = Duration::from_secs(self.config.task.confirmation_timeout);
        let outcome = self.await_answer(&id, timeout);
        let text = match outcome {
            ConfirmationOutcome::Approved => format!("Approved: {description}"),
            ConfirmationOutcome::Denied => format!("Denied: {description}"),
            ConfirmationOutcome::TimedOut => {
                format!("No answer within {} s, treated as denied: {description}", timeout.as_secs())
            }
            ConfirmationOutcome::Stopped => format!("Session stopped while waiting for: {description}"),
            ConfirmationOutcome::AutoApproved => String::new(),
        };
        self.log(LogKind::Confirmation, &text, Some(json!({"confirmation_id": id})));
        outcome
    }

    /// Put the question up (status `confirming`); its id, or `None` when the session ended.
    fn ask(&self, action: &str, description: &str, details: Value, risk_level: &str) -> Option<String> {
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

    fn await_answer(&self, id: &str, timeout: Duration) -> ConfirmationOutcome {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        let outcome = loop {
            if let Some(approved) = state.confirmation_answer.take() {
                break if approved { ConfirmationOutcome::Approved } else { ConfirmationOutcome::Denied };
            }
            if self.stop_requested() {
                break ConfirmationOutcome::Stopped;
            }
            let now = Instant::now();
            if now >= deadline {
                break ConfirmationOutcome::TimedOut;
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        };
        if state.record.confirmation_pending.as_ref().is_some_and(|c| c.confirmation_id == id) {
            state.record.confirmation_pending = None;
        }
        if state.record.status == Status::Confirming {
            state.record.status = Status::Running;
        }
        self.unlock_and_save(state);
        outcome
    }

    /// `POST /confirmation`: the answer for the pending question with this id.
    pub fn answer_confirmation(&self, confirmation_id: &str, approved: bool) -> Result<(), ApiError> {
        let mut state = self.lock();
        match &state.record.confirmation_pending {
            None => Err(ApiError::Conflict(format!("session {} has no pending confirmation", self.id))),
            Some(c) if c.confirmation_id != confirmation_id => Err(ApiError::Conflict(format!(
                "confirmation {confirmation_id:?} is not the pending one ({:?})",
                c.confirmation_id
            ))),
            Some(_) => {
                state.confirmation_answer = Some(approved);
                state.record.confirmation_pending = None;
                let snapshot = snapshot_record(&mut state);
                drop(state);
                self.changed.notify_all();
                self.write_record(snapshot);
                Ok(())
            }
        }
    }
}

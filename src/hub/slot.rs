//! One worker's command slot: the one-command-at-a-time handshake between a session thread and
//! the worker's long poll.
//!
//! The command waits in a crossbeam `bounded(1)` channel (so at most one is queued) until a
//! poll takes it; its outcome comes back through the slot's `Phase` and a Condvar the session
//! thread waits on. Every operation on the channel happens under the slot's lock together
//! with the phase change it belongs to: that is what guarantees a stale command (from a wait
//! that was abandoned) is never delivered, and that a poll parked a moment before a command
//! was queued still gets it. `Phase::Idle` is the one reset. An outcome is handed to the
//! waiting thread, never copied (a result may be a 32 MiB tree).

use crate::exec::{self, ExecError};
use crate::protocol::Command;
use crate::wait::park::{ParkKey, Parker, Responder};
use crossbeam_channel::{Receiver, Sender};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub const WAIT_BODY: &[u8] = br#"{"action":"wait"}"#;

/// Where the current command is.
enum Phase {
    Idle,
    /// In the channel; no poll has taken it yet.
    Queued {
        id: String,
    },
    /// Handed to a poll; the worker is busy with it and may stay silent for `allowance`.
    Delivered {
        id: String,
        allowance: Duration,
    },
    /// Its outcome, until the waiting session thread takes it.
    Done {
        id: String,
        outcome: Result<exec::Answer, ExecError>,
    },
}

impl Phase {
    fn id(&self) -> Option<&str> {
        match self {
            Phase::Idle => None,
            Phase::Queued { id } | Phase::Delivered { id, .. } | Phase::Done { id, .. } => Some(id),
        }
    }
}

struct SlotState {
    phase: Phase,
    /// The worker's parked `GET /command`, if any.
    parked: Option<ParkKey>,
}

pub struct CommandSlot {
    tx: Sender<Command>,
    rx: Receiver<Command>,
    state: Mutex<SlotState>,
    changed: Condvar,
}

/// What a poll gets: a command (or `wait`) now, or nothing yet (parked).
pub type Answer = Option<(Responder, Vec<u8>)>;

impl Default for CommandSlot {
    fn default() -> Self {
        let (tx, rx) = crossbeam_channel::bounded(1);
        CommandSlot {
            tx,
            rx,
            state: Mutex::new(SlotState { phase: Phase::Idle, parked: None }),
            changed: Condvar::new(),
        }
    }
}

impl CommandSlot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `cmd` (replacing anything stale) and hand it to a parked poll at once. Refused
    /// when `stopped()` (checked under the slot's lock, so a stop already seen sends nothing).
    pub fn send(&self, parker: &Parker, cmd: Command, stopped: &dyn Fn() -> bool) -> Result<(), ExecError> {
        let mut state = self.lock();
        if stopped() {
            return Err(ExecError::Stopped);
        }
        while self.rx.try_recv().is_ok() {}
        state.phase = Phase::Queued { id: cmd.id.clone() };
        if self.tx.try_send(cmd).is_err() {
            state.phase = Phase::Idle;
            return Err(ExecError::Failed("internal error: the worker's command slot is busy".into()));
        }
        let handoff = state.parked.take().and_then(|k| parker.take(k)).map(|respond| {
            let body = self.take_queued(&mut state).unwrap_or_else(|| WAIT_BODY.to_vec());
            (respond, body)
        });
        drop(state);
        answer(handoff);
        Ok(())
    }

    /// `GET /command`: the queued command at once, else park. `lost` says why a delivered
    /// command without a result is failed (a worker runs one command at a time, so a new poll
    /// means it never got it or dropped it). True when such a command was failed.
    pub fn poll(&self, parker: &Parker, respond: Responder, long_poll: Duration, closing: bool, lost: &str) -> bool {
        let mut state = self.lock();
        let failed = self.fail_delivered(&mut state, lost);
        let previous = state.parked.take().and_then(|k| parker.take(k)).map(|r| (r, WAIT_BODY.to_vec()));
        let now = match self.take_queued(&mut state) {
            Some(body) => Some((respond, body)),
            None if closing => Some((respond, WAIT_BODY.to_vec())),
            None => match parker.park(respond, long_poll, WAIT_BODY.to_vec()) {
                Ok(key) => {
                    state.parked = Some(key);
                    None
                }
                Err((respond, _, body)) => Some((respond, body)),
            },
        };
        drop(state);
        answer(previous);
        answer(now);
        failed
    }

    /// The queued command as a response body, now delivered (the worker may then stay silent
    /// for the command's own timeout); `None` when nothing is queued.
    fn take_queued(&self, state: &mut SlotState) -> Option<Vec<u8>> {
        loop {
            let cmd = self.rx.try_recv().ok()?;
            // Only the command the slot is waiting to deliver; anything else is stale.
            if matches!(&state.phase, Phase::Queued { id } if *id == cmd.id) {
                let allowance = Duration::from_secs(cmd.timeout_s);
                state.phase = Phase::Delivered { id: cmd.id.clone(), allowance };
                return Some(serde_json::to_vec(&cmd).unwrap_or_default());
            }
        }
    }

    /// Wait for the outcome of command `id`, until `deadline` or `stopped()`. Whatever ends
    /// the wait, the slot is idle afterwards (a late result is then ignored).
    pub fn wait(
        &self,
        id: &str,
        action: &str,
        timeout: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> Result<exec::Answer, ExecError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        let outcome = loop {
            // Taken, not cloned: a result can be a 32 MiB tree of JSON.
            if matches!(&state.phase, Phase::Done { id: done, .. } if done == id) {
                if let Phase::Done { outcome, .. } = std::mem::replace(&mut state.phase, Phase::Idle) {
                    break outcome;
                }
            }
            if stopped() {
                break Err(ExecError::Stopped);
            }
            let left = deadline.map_or(Duration::from_secs(86_400), |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                break Err(ExecError::Timeout { action: action.to_string(), after: timeout });
            }
            state = self.changed.wait_timeout(state, left).unwrap_or_else(|p| p.into_inner()).0;
        };
        if state.phase.id() == Some(id) {
            self.reset(&mut state);
        }
        outcome
    }

    /// `POST /result`: false when `id` is not the command in flight (late or stray).
    pub fn fill(&self, id: &str, outcome: Result<exec::Answer, ExecError>) -> bool {
        let mut state = self.lock();
        if !matches!(&state.phase, Phase::Queued { id: q } | Phase::Delivered { id: q, .. } if q == id) {
            return false;
        }
        // A result for a command never handed over: it must not be handed over later.
        self.reset(&mut state);
        state.phase = Phase::Done { id: id.to_string(), outcome };
        drop(state);
        self.changed.notify_all();
        true
    }

    /// A delivered command that has no result yet fails with `why`; true when one did.
    fn fail_delivered(&self, state: &mut SlotState, why: &str) -> bool {
        let Phase::Delivered { id, .. } = &state.phase else { return false };
        let id = id.clone();
        let msg = format!("{why} without returning a result for {id}; the command may not have run");
        state.phase = Phase::Done { id, outcome: Err(ExecError::Disconnected(msg)) };
        self.changed.notify_all();
        true
    }

    /// The worker registered again (it restarted): its parked poll is dead, and a command it
    /// had taken will never get a result. Returns the dead poll's answer, to send unlocked.
    pub fn restarted(&self, parker: &Parker, why: &str) -> Answer {
        let mut state = self.lock();
        let old = state.parked.take().and_then(|k| parker.take(k)).map(|r| (r, WAIT_BODY.to_vec()));
        self.fail_delivered(&mut state, why);
        old
    }

    /// The worker died while running the command: it fails now with `why`.
    pub fn lost(&self, why: &str) {
        let mut state = self.lock();
        self.fail_delivered(&mut state, why);
    }

    /// The worker went silent: a command it never took fails with `why`.
    pub fn fail_queued(&self, why: String) {
        let mut state = self.lock();
        if let Phase::Queued { id } = &state.phase {
            let id = id.clone();
            while self.rx.try_recv().is_ok() {}
            state.phase = Phase::Done { id, outcome: Err(ExecError::Disconnected(why)) };
            self.changed.notify_all();
        }
    }

    /// How long the worker may stay silent: `None` when not busy with a delivered command,
    /// and whether a poll of it is parked now.
    pub fn liveness(&self, parker: &Parker) -> (Option<Duration>, bool) {
        let state = self.lock();
        let busy = match &state.phase {
            Phase::Delivered { allowance, .. } => Some(*allowance),
            _ => None,
        };
        (busy, state.parked.is_some_and(|k| parker.contains(k)))
    }

    /// Wake the session thread waiting here so it rechecks its stop flag. Taking the lock
    /// orders this after the waiter's check: no lost wakeup.
    pub fn wake(&self) {
        drop(self.lock());
        self.changed.notify_all();
    }

    fn reset(&self, state: &mut SlotState) {
        if matches!(state.phase, Phase::Queued { .. }) {
            while self.rx.try_recv().is_ok() {}
        }
        state.phase = Phase::Idle;
    }
}

/// Send a poll's answer (after the locks are released).
pub fn answer(reply: Answer) {
    if let Some((respond, body)) = reply {
        respond(200, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::sync::Arc;

    fn responder() -> (Responder, crossbeam_channel::Receiver<Vec<u8>>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (Box::new(move |_, body| drop(tx.send(body))), rx)
    }

    fn command(id: &str) -> Command {
        Command {
            id: id.into(),
            action: "run_command".into(),
            params: Value::Null,
            session_id: "s".into(),
            timeout_s: 5,
            allowed_domains: Vec::new(),
            browser_profile: None,
        }
    }

    fn body_id(body: &[u8]) -> String {
        serde_json::from_slice::<Value>(body).unwrap()["id"].as_str().unwrap_or("wait").to_string()
    }

    #[test]
    fn a_parked_poll_gets_the_command_and_the_result_reaches_the_waiter() {
        let parker = Parker::default();
        let slot = Arc::new(CommandSlot::default());
        let (respond, polled) = responder();
        assert!(!slot.poll(&parker, respond, Duration::from_secs(20), false, "lost"));
        assert!(polled.try_recv().is_err(), "parked");
        slot.send(&parker, command("c1"), &|| false).unwrap();
        assert_eq!(body_id(&polled.try_recv().unwrap()), "c1");
        assert_eq!(slot.liveness(&parker), (Some(Duration::from_secs(5)), false));
        let filler = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || assert!(slot.fill("c1", Ok(Value::from(7).into()))))
        };
        assert_eq!(
            slot.wait("c1", "run_command", Duration::from_secs(5), &|| false)
                .map(|a| a.tree)
                .map_err(|e| e.to_string()),
            Ok(Value::from(7))
        );
        filler.join().unwrap();
        assert!(!slot.fill("c1", Ok(Value::Null.into())), "a late result is ignored");
        assert_eq!(slot.liveness(&parker), (None, false));
    }

    #[test]
    fn an_abandoned_command_is_never_delivered() {
        let parker = Parker::default();
        let slot = CommandSlot::default();
        slot.send(&parker, command("old"), &|| false).unwrap();
        let r = slot.wait("old", "run_command", Duration::from_millis(10), &|| false);
        assert!(matches!(r, Err(ExecError::Timeout { .. })));
        let (respond, polled) = responder();
        slot.poll(&parker, respond, Duration::from_millis(10), true, "lost");
        assert_eq!(body_id(&polled.try_recv().unwrap()), "wait", "the stale command is gone");
        slot.send(&parker, command("new"), &|| false).unwrap();
        let (respond, polled) = responder();
        slot.poll(&parker, respond, Duration::from_secs(20), false, "lost");
        assert_eq!(body_id(&polled.try_recv().unwrap()), "new");
    }

    #[test]
    fn a_new_poll_fails_a_delivered_command_and_a_stop_ends_the_wait() {
        let parker = Parker::default();
        let slot = CommandSlot::default();
        slot.send(&parker, command("c1"), &|| false).unwrap();
        let (respond, _polled) = responder();
        slot.poll(&parker, respond, Duration::from_secs(20), false, "lost");
        let (respond, _again) = responder();
        assert!(slot.poll(&parker, respond, Duration::from_secs(20), false, "worker w asked for new work instead"));
        let r = slot.wait("c1", "run_command", Duration::from_secs(5), &|| false);
        assert!(matches!(r, Err(ExecError::Disconnected(m)) if m.contains("asked for new work")));
        slot.send(&parker, command("c2"), &|| false).unwrap();
        assert!(matches!(slot.wait("c2", "run_command", Duration::from_secs(5), &|| true), Err(ExecError::Stopped)));
        slot.fail_queued("gone".into());
        assert_eq!(slot.liveness(&parker).0, None);
        assert!(
            matches!(slot.send(&parker, command("c3"), &|| true), Err(ExecError::Stopped)),
            "a stop already seen sends nothing"
        );
    }

    #[test]
    fn a_result_for_a_command_never_handed_over_keeps_it_from_being_handed_over() {
        let parker = Parker::default();
        let slot = CommandSlot::default();
        slot.send(&parker, command("c1"), &|| false).unwrap();
        assert!(slot.fill("c1", Ok(Value::Null.into())));
        assert_eq!(
            slot.wait("c1", "run_command", Duration::from_secs(5), &|| false)
                .map(|a| a.tree)
                .map_err(|e| e.to_string()),
            Ok(Value::Null)
        );
        let (respond, polled) = responder();
        slot.poll(&parker, respond, Duration::from_millis(10), true, "lost");
        assert_eq!(body_id(&polled.try_recv().unwrap()), "wait");
    }
}

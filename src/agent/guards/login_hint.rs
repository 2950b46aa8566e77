//! `login_hint` (small profile, after a result, where it is read): a page with a sign-in form
//! (the worker's `sign_in`), in a session with stored credentials, is told that perform_login is
//! the way in (small models submit the empty form instead). Twice a session at most.
//!
//! Invariant: the note follows the result's text, before its images; no session without
//! credentials is told of them.

use super::super::Agent;
use super::{Modes, Reading, Unit};
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::LoginHint,
    modes: Modes::ALL,
    evidence: "own 14, three repeats: 3 → 0 (login-invoice); again after the sign-in form rule, three \
               paired repeats (0652cf9, 1f6f954; OpenAI native): 3 → 0. MiniWoB: never fired. Stays.",
};

/// The most sign-in forms pointed out in a session.
const MAX_HINTS: u32 = 2;

impl Agent {
    /// Where a result is read: perform_login named on a sign-in form.
    pub(in crate::agent) fn login_hint(&mut self, reading: &Reading) -> Option<String> {
        if !self.record.has_credentials || !reading.sign_in || self.guard_state.login_hints >= MAX_HINTS {
            return None;
        }
        self.guard_state.login_hints += 1;
        self.fire(Guard::LoginHint, "a sign-in form: perform_login named");
        Some(
            "A sign-in form is on this page: call perform_login, which fills and submits it with the stored credentials."
                .to_string(),
        )
    }
}

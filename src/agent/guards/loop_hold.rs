//! `loop_hold` (both profiles, before a call, as a step): a call that would repeat a loop — the
//! same call or a cycle of two or three, with the same results — a third time is not run; held
//! again soon after, the session is stuck (`loops.rs` keeps the calls and marks it).
//!
//! Invariant: the held call is answered like any other, naming what else there is to do.

use super::super::Agent;
use super::super::loops::call_key;
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::LoopHold,
    modes: Modes::ALL,
    evidence: "not ablated: the loop rows serve every model and run in both profiles \
               (docs/eval-history.md, below the guard table)",
};

impl Agent {
    /// Before a call: held when it would repeat a loop a third time.
    pub(in crate::agent) fn loop_hold(&mut self, call: &mut Call) -> Verdict {
        let Some(p) = self.loops.would_repeat(&call_key(&call.name, &call.input)) else { return Verdict::Go };
        let what = self.loops.describe(p);
        self.fire(Guard::LoopHold, &format!("{what} not run again"));
        Verdict::Held(self.held_back(&what, "it gave the same results three times"))
    }
}

//! `failed_hold` (both profiles, before a call, as a step): a call whose last two failures
//! answered the same (other calls between or not: small models retry) is not run again until a
//! new page comes (`loops.rs` forgets the failures then); one that failed two ways may meet a
//! page that changed in between, and runs.
//!
//! Invariant: the held call is answered like any other.

use super::super::Agent;
use super::super::context::excerpt;
use super::super::loops::{SHOWN, call_key};
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::FailedHold,
    modes: Modes::ALL,
    evidence: "not ablated: the loop rows serve every model and run in both profiles \
               (docs/eval-history.md, below the guard table)",
};

impl Agent {
    /// Before a call: held when it failed the same way twice already.
    pub(in crate::agent) fn failed_hold(&mut self, call: &mut Call) -> Verdict {
        let key = call_key(&call.name, &call.input);
        if !self.loops.failed_alike(&key) {
            return Verdict::Go;
        }
        let what = format!("`{}`", excerpt(&key, SHOWN));
        self.fire(Guard::FailedHold, &format!("{what} not run again"));
        Verdict::Held(self.held_back(&what, "it failed the same way twice before"))
    }
}

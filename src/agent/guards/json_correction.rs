//! `json_correction` (both profiles, before a call, a hint; JSON action mode only): a reply that
//! cannot be read as an action (no JSON object, an unknown tool, arguments that are not an
//! object, a `complete` with no finish offered) is answered once with the exact error, and the
//! model asked again, before it counts as the model's words. It is what a native API does for a
//! malformed call (it refuses it with the reason), so it serves every model in this mode. The
//! round itself is the model layer's (`llm::json_mode`); whether it runs is this unit's
//! (`Request::correct_once`), and each round is its event.
//!
//! Invariant: off, a reply that is no action is the model's words at once (the session's one
//! nudge, then its end), and nothing is said to the model about why.

use super::super::Agent;
use super::{Modes, Unit};
use crate::llm::Reply;
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::JsonCorrection,
    modes: Modes::JSON,
    evidence: "moved from the JSON-mode provider, where it ran in every JSON-mode session uncounted. MiniWoB's 9 multi-step pages, JSON, three repeats paired (f178551): 0 → 0 in the 7 \
     runs it fired in (daily-calendar, order-food, form-sequence fail either way).",
};

impl Agent {
    /// Whether this turn's request answers an unreadable JSON action once before giving up on it.
    pub(in crate::agent) fn json_correction_asked(&self) -> bool {
        self.unit_on(&UNIT)
    }

    /// The reply as it came: one that came after a correction is this unit's event.
    pub(in crate::agent) fn json_corrected(&mut self, reply: &mut Reply) {
        if let Some(error) = reply.corrected.take() {
            self.fire(Guard::JsonCorrection, &format!("a reply that was no action answered once: {error}"));
        }
    }
}

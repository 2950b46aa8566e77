//! `stuck_deliver` (both profiles, before a turn): a session the loop detector found stuck gets
//! one last call before it ends — the last chance of `focus.rs`, which offers only the
//! session's tools that deliver, the finish among them, and requires a call. Stuck again, or
//! answering that turn in words, the session ends (`wrapup.rs`). Off, a stuck session ends at once.
//!
//! Invariant: one last chance a session; nothing here reads the task's words.

use super::super::Agent;
use super::super::focus::Focus;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::takeover::BudgetKind;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::StuckDeliver,
    modes: Modes::ALL,
    evidence: "not ablated: the loop rows serve every model and run in both profiles \
               (docs/eval-history.md, below the guard table)",
};

impl Agent {
    /// Before a turn of a stuck session: the last chance, once (then stuck is the end).
    pub(in crate::agent) fn stuck_last_chance(&mut self) -> bool {
        if self.focus.delivery_tried {
            return false;
        }
        self.focus.delivery_tried = true;
        self.loops.unstick();
        true
    }

    /// The guard that focuses this turn, fired: this one, for a stuck session's last chance (the
    /// budget's wrap-up is no guard: every session ends so).
    pub(in crate::agent) fn focused_by(&mut self, stuck: bool, budget: Option<BudgetKind>) -> Option<Guard> {
        let by = (stuck && budget.is_none()).then_some(UNIT.guard);
        if let Some(guard) = by {
            self.fire(guard, "stuck: one call that can only deliver");
        }
        by
    }

    /// A call outside the last chance's offer, refused (`focus.rs`): said in the log as this
    /// unit's when it chose the turn.
    pub(in crate::agent) fn refused_by_focus(&mut self, name: &str) {
        if let Some(guard) = self.focus.by {
            self.fire(guard, &format!("{name} not run: this turn asks to deliver"));
        }
    }

    /// The last chance answered in words: why the session was stuck, to end with.
    pub(in crate::agent) fn last_chance_unused(&self, called: bool) -> Option<String> {
        if called || !self.focus.delivery_tried || self.focus.turn != Focus::Deliver {
            return None;
        }
        self.loops.last_stuck()
    }
}

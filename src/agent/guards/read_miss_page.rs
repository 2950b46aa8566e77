//! `read_miss_page` (small profile, in the worker, a redirect): a read of part of the page (its
//! text, DOM, links or a table) whose selector matches nothing answers with the whole page as a
//! result (`found: false`, what was missed, the snapshot), so the model reads on from the page
//! rather than taking the error as the end of reading. The worker answers so only for a command
//! sent with `read_miss_page: true`, which this unit decides; its answer's `found: false`
//! becomes this unit's log event.
//!
//! Invariant: off, such a read fails as an action's miss does, with the page added, and the
//! model is told it was an error.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ReadMissPage,
    modes: Modes::ALL,
    evidence: "moved from the worker's reading tools, where it ran in every session and every profile \
     (bb63f50); not yet ablated.",
};

/// The tools that only read part of the page by a selector.
fn reads_part(tool: Tool) -> bool {
    matches!(tool, Tool::BrowserGetDom | Tool::BrowserGetText | Tool::BrowserScrapeLinks | Tool::BrowserScrapeTable)
}

impl Agent {
    /// A reading's parameters: `read_miss_page`, always sent (false where the unit is off).
    pub(in crate::agent) fn read_miss_page_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if reads_part(tool) {
            params["read_miss_page"] = on.into();
        }
    }

    /// After the answer: a read answered with the page instead is this unit's event.
    pub(in crate::agent) fn read_missed(&mut self, tool: Tool, input: &Value, answer: &mut Value) {
        if reads_part(tool) && answer["found"] == false {
            let selector = input["selector"].as_str().unwrap_or("the selector");
            self.fire(Guard::ReadMissPage, &format!("`{selector}` matched nothing: answered with the page"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_read_miss_page_is_asked_for_reads_only() {
        assert!(reads_part(Tool::BrowserScrapeTable) && reads_part(Tool::BrowserGetText));
        assert!(!reads_part(Tool::BrowserClick), "an action's miss is an error in every profile");
        assert!(!reads_part(Tool::BrowserSnapshot), "the whole page has no selector to miss");
    }
}

//! `short_catalog` (small profile, before a turn): a short tool list — the screenshot only for a
//! model known to see, what asks a person only where one answers, notifications only where the
//! session has a target, notes only in explorations, and none of the table's unlisted tools;
//! the rest run when called by name. A small model picks from fewer tools and a short first
//! request.
//!
//! Invariant: the hidden tools still run when called; the list is the same every turn (so a
//! local server keeps its prompt cache), decided once when the session starts.

use super::super::Agent;
use super::{Guards, Modes, Unit};
use crate::config::Vision;
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use crate::protocol::{Mode, SessionRecord};

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ShortCatalog,
    modes: Modes::ALL,
    evidence: "own 14, the whole suite off, OpenAI, two runs: 12 → 11 and 11 → 11, 384 k → 571 k input tokens, \
               51 → 87 minutes; first request 1 891 → 3 302 tokens. MiniWoB, three repeats: 38 → 38 of 108, a \
               run's input tokens about 170 k → 290 k; first request 1 950 → 3 363. Stays: it buys no pass, but \
               without it the first request is past the 2 000-token bar and a run costs two thirds more tokens. MiniWoB's 9 \
               multi-step pages, Anthropic native, three repeats paired (16f7a63): 10 → 7 of 27, 197 k → 259 k input tokens.",
};

/// Whether the short catalog lists `tool` (else it runs only when called by name).
fn lists(tool: Tool, record: &SessionRecord, vision: Vision) -> bool {
    match tool {
        Tool::BrowserScreenshot => vision == Vision::On,
        Tool::RequestConfirmation | Tool::AskUser | Tool::RequestTakeover => !record.options.auto_confirm,
        Tool::SendNotification => record.notifications.telegram || record.notifications.webhook,
        // A task's deliverable is its files and its answer; notes serve explorations.
        Tool::SaveNote => record.mode == Mode::Explore,
        // Uploads serve a task that came with files (it still runs when called by name).
        Tool::BrowserUploadFile => !record.inputs.is_empty(),
        _ => !tool.spec().unlisted,
    }
}

/// The offered tools the model is not shown, where the unit is on (`json_actions`: the tool mode).
pub(in crate::agent) fn hidden(
    guards: &Guards,
    json_actions: bool,
    offered: &[Tool],
    record: &SessionRecord,
    vision: Vision,
) -> Vec<Tool> {
    let on = guards.on(UNIT.guard) && UNIT.modes.has(json_actions);
    offered.iter().copied().filter(|t| on && !lists(*t, record, vision)).collect()
}

impl Agent {
    /// Before the first turn: the tools not listed, said in the log.
    pub(in crate::agent) fn announce_short_catalog(&mut self) {
        if !self.hidden.is_empty() {
            let names: Vec<&str> = self.hidden.iter().map(|t| t.name()).collect();
            self.fire(Guard::ShortCatalog, &format!("not listed (run when called): {}", names.join(", ")));
        }
    }
}

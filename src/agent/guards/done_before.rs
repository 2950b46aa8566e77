//! `done_before` (both profiles, before a call, as a step): a URL downloaded before, or the
//! page printed before as it is now, is answered with the file it made (each print differs from
//! the last only by its timestamp); the answer still counts towards a loop (a small model clicks
//! the same file link again and again). `loops.rs` remembers the files.
//!
//! Invariant: nothing is fetched or printed twice while the unit is on; the answer names the
//! file the session already has.

use super::super::Agent;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::json;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::DoneBefore,
    modes: Modes::ALL,
    evidence: "not ablated: with the loop rows it serves every model and runs in both profiles \
               (docs/eval-history.md, below the guard table)",
};

/// The answer to a download of a URL stored as `file` before.
fn downloaded(file: &str) -> ToolOutcome {
    ToolOutcome::ok(json!({
        "already_downloaded": file,
        "note": format!("This URL was downloaded before and is in the session's files as {file}; it is not \
                         fetched again. If the task is done, finish."),
    }))
}

/// The answer to a print of a page printed as `file` before, as it is now.
fn printed(file: &str) -> ToolOutcome {
    ToolOutcome::ok(json!({
        "already_saved": file,
        "note": format!("This page, as it is now, was saved as a PDF before: it is in the session's files as \
                         {file} and is not saved again. If the task is done, finish."),
    }))
}

impl Agent {
    /// Before a call: a download or print made before answered with its file.
    pub(in crate::agent) fn done_before(&mut self, call: &mut Call) -> Verdict {
        let done = if call.name == Tool::BrowserDownload.name() {
            call.input["url"].as_str().and_then(|url| self.loops.downloaded(url)).map(|f| downloaded(f))
        } else if call.name == Tool::BrowserSaveAsPdf.name() {
            self.page_identity().and_then(|page| self.loops.printed(page)).map(|f| printed(f))
        } else {
            None
        };
        let Some(done) = done else { return Verdict::Go };
        self.fire(Guard::DoneBefore, &format!("{} answered with the file it made before", call.name));
        Verdict::Answered(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_done_before_answers_with_the_file_and_names_it() {
        let text = crate::agent::context::first_text(&downloaded("report.pdf").content);
        assert!(text.contains("\"already_downloaded\":\"report.pdf\""), "{text}");
        let text = crate::agent::context::first_text(&printed("page.pdf").content);
        assert!(text.contains("saved as a PDF before") && text.contains("page.pdf"), "{text}");
    }
}

//! `done_before` (both profiles, before a call, as a step): a URL downloaded before, or the
//! page printed before as it is now, is answered with the file it made (each print differs from
//! the last only by its timestamp); the answer still counts towards a loop (a small model clicks
//! the same file link again and again). `loops.rs` remembers the files.
//!
//! Invariant: nothing is fetched or printed twice while the unit is on; the answer names the
//! file the session already has.

use super::super::Agent;
use super::super::boundary::Boundary;
use super::super::outcome::ToolOutcome;
use super::{Call, Modes, Unit, Verdict};
use crate::llm::Block;
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::json;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::DoneBefore,
    modes: Modes::ALL,
    evidence: "not ablated: with the loop rows it serves every model and runs in both profiles \
               (docs/eval-history.md, below the guard table)",
};

/// The answer to a download of a URL stored as `file` before. The name is the server's (a
/// download keeps the name it was sent with), so it goes between the markers, on lines after
/// the answer's JSON as a snapshot does.
fn downloaded(boundary: &Boundary, file: &str) -> ToolOutcome {
    let said = json!({
        "already_downloaded": true,
        "note": "This URL was downloaded before and is in the session's files under the name below; it is not \
                 fetched again. If the task is done, finish.",
    });
    ToolOutcome::blocks(vec![Block::text(format!("{said}\n{}", boundary.wrap(file)))])
}

/// The answer to a print of a page printed as `file` before, as it is now (a PDF's name comes
/// from the page's title).
fn printed(boundary: &Boundary, file: &str) -> ToolOutcome {
    let said = json!({
        "already_saved": true,
        "note": "This page, as it is now, was saved as a PDF before: it is in the session's files under the name \
                 below and is not saved again. If the task is done, finish.",
    });
    ToolOutcome::blocks(vec![Block::text(format!("{said}\n{}", boundary.wrap(file)))])
}

impl Agent {
    /// Before a call: a download or print made before answered with its file.
    pub(in crate::agent) fn done_before(&mut self, call: &mut Call) -> Verdict {
        let done = if call.name == Tool::BrowserDownload.name() {
            call.input["url"].as_str().and_then(|url| self.loops.downloaded(url)).map(|f| downloaded(&self.boundary, f))
        } else if call.name == Tool::BrowserSaveAsPdf.name() {
            self.page_identity().and_then(|page| self.loops.printed(page)).map(|f| printed(&self.boundary, f))
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
        let b = Boundary::new(crate::protocol::SessionType::Browser);
        let (open, close) = b.markers();
        let text = crate::agent::context::first_text(&downloaded(&b, "report.pdf").content);
        assert!(text.contains("\"already_downloaded\":true"), "{text}");
        assert!(text.ends_with(&format!("\n{open}\nreport.pdf\n{close}")), "the server's name is data: {text}");
        let text = crate::agent::context::first_text(&printed(&b, "page.pdf").content);
        assert!(text.contains("saved as a PDF before") && text.contains(&format!("{open}\npage.pdf\n")), "{text}");
    }
}

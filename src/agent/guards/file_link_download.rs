//! `file_link_download` (small profile, before a call, as made): a click on a link ref whose
//! address leads to a file (`.pdf`, `.zip`, `.csv`… by `snapshot::file_link`) runs as
//! `browser_download` of its URL, said so in a note: a viewer has no page to act on, and small
//! models then act on refs that are gone.
//!
//! Invariant: only where the session offers `browser_download`, only a link of the page the
//! model last saw; the step log records the download that was made.

use super::super::Agent;
use super::super::snapshot::{file_link, line_of, ref_in};
use super::{Call, Modes, Unit, Verdict};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::FileLinkDownload,
    modes: Modes::ALL,
    evidence: "own 14, three repeats: 4 → 6 (head-office passed without it twice); this agent: OpenAI 1 → 1, \
               Anthropic 2 → 2, JSON 3 → 1 (all-pdfs, login-invoice). MiniWoB: never fired. Went in ca2d3cb on \
               the OpenAI format's 4 → 6, came back in 1ed029a: in JSON mode the model clicks a PDF link where \
               it should download it.",
};

/// The file a click on ref `selector` of `page` leads to.
fn file_of<'a>(page: &'a str, selector: &str) -> Option<&'a str> {
    file_link(line_of(page, ref_in(selector)?)?)
}

impl Agent {
    /// Before a call: a click on a link to a file made the download it means.
    pub(in crate::agent) fn file_link_download(&mut self, call: &mut Call) -> Verdict {
        let Some(url) = self.clicked_file_link(&call.name, &call.input) else { return Verdict::Go };
        self.fire(Guard::FileLinkDownload, &format!("{} on a link to a file: downloaded instead", call.name));
        let selector = call.input["selector"].as_str().unwrap_or("the element");
        let note = format!("{selector} links to a file: it was downloaded, not opened (the page stays as it was).");
        call.redirected.push(note);
        call.name = Tool::BrowserDownload.name().to_string();
        call.input = json!({ "url": url });
        Verdict::Go
    }

    /// The file a click on a link ref of the page open now leads to, when the session can
    /// download it.
    fn clicked_file_link(&self, name: &str, input: &Value) -> Option<String> {
        if name != Tool::BrowserClick.name() || !self.offered.contains(&Tool::BrowserDownload) {
            return None;
        }
        file_of(self.last_page.as_deref()?, input["selector"].as_str()?).map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search form and its results: what `file_link_download` was not written for.
    const SEARCH: &str = "[e2] input search \"Search\" name=q value=\"lamp\"\n[e3] button \"Go\"\n\
                          [e4] link \"Lamps\" → http://h/c/lamps\n[e5] link \"Lamp shades\" → http://h/c/shades";

    #[test]
    fn guard_file_link_download_fires_on_a_link_to_a_file() {
        let line = "[e7] link \"Annual report (PDF, 2 MB)\" → https://h/reports/2024.pdf";
        assert_eq!(file_link(line), Some("https://h/reports/2024.pdf"));
        assert_eq!(
            file_link("[e8] link \"Data\" → https://h/export/sales.CSV#top"),
            Some("https://h/export/sales.CSV#top")
        );
        let page = format!("{SEARCH}\n{line}");
        assert_eq!(file_of(&page, "ref=e7"), Some("https://h/reports/2024.pdf"), "the ref clicked");
    }

    #[test]
    fn guard_file_link_download_is_quiet_on_pages_searches_and_buttons() {
        for line in SEARCH.lines() {
            assert_eq!(file_link(line), None, "{line}");
        }
        assert_eq!(file_link("[e2] link \"Reports\" → https://h/reports?format=pdf"), None, "a page that lists files");
        assert_eq!(file_link("[e3] link \"report.pdf\" → https://h/view?file=report.pdf"), None, "a viewer page");
        assert_eq!(file_link("[e4] button \"Download PDF\""), None, "a button is clicked");
        assert_eq!(file_of(SEARCH, "#go"), None, "a CSS selector names no ref");
    }
}

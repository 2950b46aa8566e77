//! What a task's words say it keeps, read for small-only guards alone: the file it names (its
//! last bare file name), the tool its words point at, and whether that is saved. The units that
//! read them are `premature_finish` and `answer_in_words` (`guards/`).
//!
//! Invariant: only small-only guard units read these, each where its row is on, so the `full`
//! profile never chooses a tool or a file from the instruction's words.

use super::super::Agent;
use crate::protocol::SessionType;
use crate::protocol::tools::Tool;

impl Agent {
    /// Whether what the task asks to keep is saved: the file it names (a side download, a
    /// guide clicked on the way, is not `answer.txt`), else any file.
    pub(in crate::agent) fn delivered(&self) -> bool {
        let files = self.runner.deliverable_files();
        match self.named_file().filter(|f| !f.to_lowercase().ends_with(".pdf")) {
            Some(named) => files.iter().any(|f| f.filename.eq_ignore_ascii_case(&named)),
            None => !files.is_empty(),
        }
    }

    /// The file the task asks to keep (`answer.txt`, `staff.csv`), as written.
    pub(in crate::agent) fn named_file(&self) -> Option<String> {
        file_to_keep(self.record.instruction.as_deref().unwrap_or(""))
    }

    /// The tool the task's words point at for what it asks to keep, if any.
    pub(in crate::agent) fn task_deliverable(&self) -> Option<Tool> {
        let task = self.record.instruction.as_deref().unwrap_or("").to_lowercase();
        let names_file = self.named_file().is_some_and(|f| !f.to_lowercase().ends_with(".pdf"));
        let shell = self.record.session_type == SessionType::Shell;
        let candidates = [
            (shell && (task.contains("create") || task.contains("write")), Tool::WriteFile),
            (task.contains("pdf") && !task.contains("download"), Tool::BrowserSaveAsPdf),
            (task.contains("download"), Tool::BrowserDownload),
            (names_file && task.contains("table"), Tool::BrowserScrapeTable),
            (names_file || task.contains("save"), Tool::SaveFile),
        ];
        let listed = |t: Tool| self.offered.contains(&t) && !self.hidden.contains(&t);
        candidates.into_iter().find(|(yes, t)| *yes && listed(*t)).map(|(_, t)| t)
    }
}

/// The file a task asks to keep: its last bare file name. A path (`/srv/app/sales.csv`) is a
/// file to read, and a task names what it reads before where it saves ("a file named
/// notes.txt … save its contents as found.txt").
fn file_to_keep(task: &str) -> Option<String> {
    bare_file_names(task).pop().map(str::to_string)
}

/// The bare file names of a task, in order (`notes-2031.txt`, then `found.txt`).
fn bare_file_names(task: &str) -> Vec<&str> {
    task.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '-' && c != '_'))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.contains('/'))
        .filter(|w| [".txt", ".csv", ".json", ".md", ".pdf"].iter().any(|e| w.to_lowercase().ends_with(e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_to_keep_is_the_last_bare_file_name() {
        assert_eq!(file_to_keep("Save just the price in answer.txt.").as_deref(), Some("answer.txt"));
        let find = "Somewhere under /tmp/x is a file named notes-2031.txt. Save its contents as found.txt.";
        assert_eq!(file_to_keep(find).as_deref(), Some("found.txt"));
        let sum = "/srv/data/sales.csv has an amount column. Save the sum in answer.txt.";
        assert_eq!(file_to_keep(sum).as_deref(), Some("answer.txt"));
        assert_eq!(file_to_keep("Count the lines of /var/log/app.txt"), None);
    }
}

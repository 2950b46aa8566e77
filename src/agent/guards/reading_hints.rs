//! `reading_hints` (small profile, after a result, before it becomes the model's text): a
//! target's read or command answered with what a command would do better. A `read_file` of a
//! CSV file gets its columns by number and the awk that sums one; of a long text, its line count
//! and the grep that counts or picks lines; a `run_command` that runs awk over a CSV file by
//! blanks is pointed at `-F,`, one that printed the path of one file at read_file, one whose
//! program the shell did not find is told it is none. Small models add up or count by eye and
//! get it wrong, and run a `find` that worked again instead of reading what it found.
//!
//! Invariant: fields are added beside the result's own (`columns`, `lines`, `hint`), the same on
//! the worker and over SSH, since the controller adds them; a result with a hint of its own is
//! left as it is.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::{Value, json};

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::ReadingHints,
    modes: Modes::ALL,
    evidence: "moved from the worker and the SSH executor, where it ran in every session. Three paired \
     repeats (OpenAI native, own shell tasks; 0652cf9, then 1f6f954): 6 → 2 (csv-sum, log-errors). \
     MiniWoB: never fires. Stays; JSON mode not yet paired.",
};

/// Lines past which a model counts or picks lines by eye badly.
const LONG_TEXT_LINES: usize = 20;

impl Agent {
    /// A shell tool's answer, before it is rendered: the hint its read or command calls for.
    pub(in crate::agent) fn reading_hints(&mut self, tool: Tool, input: &Value, result: &mut Value) {
        if result.get("hint").is_some() {
            return;
        }
        match tool {
            // The path the read answered for (a worker may have read another than asked).
            Tool::ReadFile => match (result["path"].as_str().or(input["path"].as_str()), result["content"].as_str()) {
                (Some(path), Some(content)) if result["encoding"].is_null() => {
                    let (path, content) = (path.to_string(), content.to_string());
                    annotate_read(&path, &content, result)
                }
                _ => {}
            },
            Tool::RunCommand => annotate_command(input["command"].as_str().unwrap_or(""), result),
            _ => return,
        }
        if let Some(hint) = result.get("hint").and_then(Value::as_str) {
            let what = hint.split(':').next().unwrap_or(hint).to_string();
            self.fire(Guard::ReadingHints, &format!("{}: {what}", tool.name()));
        }
    }
}

/// Add the columns or the line count, and the command hint, to a `read_file` result.
fn annotate_read(path: &str, content: &str, read: &mut Value) {
    if let Some((columns, hint)) = csv_columns(path, content) {
        read["columns"] = columns.into();
        read["hint"] = hint.into();
    } else if let Some((lines, hint)) = long_text(path, content) {
        read["lines"] = lines.into();
        read["hint"] = hint.into();
    }
}

/// Add a hint to a `run_command` result whose command runs awk over a CSV file by blanks, or
/// that printed one path (`find -name`, `grep -l`): small models run the finding command again
/// instead of reading what it found.
fn annotate_command(command: &str, result: &mut Value) {
    if command.contains("awk") && command.contains(".csv") && !command.contains("-F") && !command.contains("FS") {
        result["hint"] = json!(
            "awk splits fields on blanks unless told otherwise, and a .csv file is comma-separated: \
             use awk -F, (skip the header row with NR>1)"
        );
    } else if let Some(path) = one_path(result["stdout"].as_str().unwrap_or("")) {
        result["hint"] = json!(format!("one path found: read_file with path \"{path}\" shows what it holds"));
    } else if let Some(program) = not_found(command, result) {
        result["hint"] = json!(format!(
            "`{program}` is not a program on this machine: use the usual tools (cat, ls, find, grep, awk, sort, wc)"
        ));
    }
}

/// The program of a command the shell could not find (exit 127): small models run a name
/// they read in the task (the machine's, a file's) as if it were one.
fn not_found<'a>(command: &'a str, result: &Value) -> Option<&'a str> {
    let missing = result["exit_code"] == 127 && result["stderr"].as_str().is_some_and(|e| e.contains("not found"));
    missing.then(|| command.split_whitespace().next()).flatten()
}

/// Output that is one absolute path of a file and nothing else (its name has an extension:
/// `pwd`'s folder is not a file to read).
fn one_path(stdout: &str) -> Option<&str> {
    let path = stdout.trim();
    let name = path.rsplit('/').next().unwrap_or("");
    let file = path.starts_with('/') && name.contains('.') && !path.contains(char::is_whitespace);
    file.then_some(path)
}

/// A CSV file's columns by number, and the awk command that adds one up.
fn csv_columns(path: &str, content: &str) -> Option<(String, String)> {
    if !path.to_ascii_lowercase().ends_with(".csv") {
        return None;
    }
    let mut lines = content.lines();
    let header: Vec<&str> = lines.next()?.split(',').map(str::trim).collect();
    let first: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let numeric = (0..header.len()).find(|&i| first.get(i).is_some_and(|v| v.parse::<f64>().is_ok()));
    let n = numeric.unwrap_or(header.len() - 1) + 1;
    let columns = header.iter().enumerate().map(|(i, h)| format!("${} {h}", i + 1)).collect::<Vec<_>>().join(", ");
    let hint = format!(
        "to add up, count or filter a column, let a command do it, e.g. run_command \
         `awk -F, 'NR>1 {{s += ${n}}} END {{print s}}' {path}` (the sum of ${n} {}; `NR>1 && $2 == \"x\"` filters)",
        header[n - 1]
    );
    Some((columns, hint))
}

/// A long text file's line count, and the commands that count or pick lines.
fn long_text(path: &str, content: &str) -> Option<(usize, String)> {
    let lines = content.lines().count();
    (lines > LONG_TEXT_LINES).then(|| {
        let hint = format!(
            "{lines} lines: to count or pick lines, let a command do it, e.g. run_command `grep -c 'WORD' {path}` \
             (how many lines contain WORD) or `grep -n 'WORD' {path}` (which ones)"
        );
        (lines, hint)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_hints_give_a_csv_its_columns_and_a_log_its_line_count() {
        let mut read = json!({});
        annotate_read("/d/s.csv", "item,amount\na,2\n", &mut read);
        assert_eq!(read["columns"], "$1 item, $2 amount");
        assert!(read["hint"].as_str().unwrap().contains("awk -F, 'NR>1 {s += $2} END {print s}' /d/s.csv"));
        let mut read = json!({});
        annotate_read("/d/app.log", &"ERROR x\n".repeat(25), &mut read);
        assert_eq!(read["lines"], 25);
        let mut read = json!({});
        annotate_read("/d/short.txt", "one line\n", &mut read);
        assert_eq!(read, json!({}));
    }

    #[test]
    fn reading_hints_point_one_path_printed_at_read_file() {
        let mut found = json!({"exit_code": 0, "stdout": "/srv/tree/b/notes.txt\n"});
        annotate_command("find /srv -name notes.txt", &mut found);
        assert_eq!(found["hint"], "one path found: read_file with path \"/srv/tree/b/notes.txt\" shows what it holds");
        for stdout in ["/srv/a.txt\n/srv/b.txt\n", "total 0\n", "/srv/dir/", "/tmp/box\n", ""] {
            let mut other = json!({"stdout": stdout});
            annotate_command("ls", &mut other);
            assert!(other.get("hint").is_none(), "{stdout:?}");
        }
    }

    #[test]
    fn reading_hints_point_awk_over_a_csv_at_the_separator() {
        let mut out = json!({});
        annotate_command("awk '{s += $2} END {print s}' s.csv", &mut out);
        assert!(out["hint"].as_str().unwrap().contains("-F,"));
        let mut out = json!({});
        annotate_command("awk -F, '{s += $2}' s.csv", &mut out);
        assert!(out.get("hint").is_none());
    }

    #[test]
    fn reading_hints_name_a_program_not_found() {
        let mut out = json!({"exit_code": 127, "stderr": "sh: 1: eval-box: not found\n", "stdout": ""});
        annotate_command("eval-box /d/s.csv", &mut out);
        assert!(out["hint"].as_str().unwrap().starts_with("`eval-box` is not a program on this machine"));
    }
}

//! `same_name_read` (small profile, in the worker, a redirect): a `read_file` of a path that
//! does not exist reads the only file of that name below the nearest folder that does, said in
//! the answer's `note`. Small models guess a file's folder from the task's words, then read the
//! file it turns out to be in, or make its content up. The worker and the SSH executor search
//! only when a read is sent with `same_name: true`, which this unit decides: one tool behaves
//! the same on both, and not at all where the unit is off.
//!
//! Invariant: several files of the name, or none, are no answer: the read fails as asked, its
//! error naming them (or saying there are none). Off, a missing path is only that.

use super::super::Agent;
use super::{Modes, Unit};
use crate::protocol::guards::Guard;
use crate::protocol::tools::Tool;
use serde_json::Value;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::SameNameRead,
    modes: Modes::ALL,
    evidence: "moved from the worker, where it ran in every session (SSH did not have it). Three paired \
     repeats (OpenAI native; 0652cf9, then 1f6f954): find-file 3 → 0. MiniWoB: never fires. Stays; JSON \
     mode not yet paired.",
};

/// Whether the answer to a read of `input`'s path is another file's.
fn read_elsewhere(input: &Value, result: &Value) -> bool {
    result["note"].is_string() && result["path"].is_string() && result["path"] != input["path"]
}

impl Agent {
    /// A read's parameters: `same_name`, always sent (false where the unit is off).
    pub(in crate::agent) fn same_name_params(&self, on: bool, tool: Tool, _input: &Value, params: &mut Value) {
        if tool == Tool::ReadFile {
            params["same_name"] = on.into();
        }
    }

    /// After the answer: the read that found another path is logged as this unit's.
    pub(in crate::agent) fn same_name_answered(&mut self, tool: Tool, input: &Value, result: &mut Value) {
        if tool == Tool::ReadFile && read_elsewhere(input, result) {
            let found = result["path"].as_str().unwrap_or_default().to_string();
            self.fire(Guard::SameNameRead, &format!("a missing path read as {found}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guard_same_name_read_is_told_apart_from_a_read_as_asked() {
        let asked = json!({"path": "/srv/notes.txt"});
        let moved = json!({"path": "/srv/b/notes.txt", "content": "x", "note": "…"});
        assert!(read_elsewhere(&asked, &moved));
        assert!(!read_elsewhere(&asked, &json!({"path": "/srv/notes.txt", "content": "x"})));
        assert!(!read_elsewhere(&asked, &json!({"path": "/srv/notes.txt", "content": "x", "note": "cut"})));
    }
}

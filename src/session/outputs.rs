//! Stored tool outputs: a result too long for the model's context is kept in the session's
//! `tool_outputs/` folder (the store builds the paths) and read back by id when the model
//! traverses it. Outputs are scrubbed of the vault's secrets before they are written.

use super::SessionRunner;

impl SessionRunner {
    /// Keep a tool output; its id (`out_NNN_<tool>`), or the error that kept it from the disk.
    pub fn save_tool_output(&self, tool: &str, text: &str) -> std::io::Result<String> {
        let session = self.session();
        let text = session.vault().scrub_cow(text);
        session.dir.write_tool_output(tool, &text)
    }

    /// A stored output by id; `None` when there is none by that id.
    pub fn read_tool_output(&self, id: &str) -> Option<String> {
        self.session().dir.read_tool_output(id).ok().flatten()
    }

    /// The stored outputs' ids and sizes, oldest first.
    pub fn tool_outputs(&self) -> Vec<(String, u64)> {
        self.session().dir.tool_outputs().unwrap_or_default()
    }
}

//! Tool outputs too long for the model's context, one `tool_outputs/<id>.txt` each, ids
//! `out_NNN_<tool>`: written, read back by id (an id names nothing outside the folder), listed.
//! The folder is made 0700 like the session's others (its files 0600), and one that is a link
//! to elsewhere is never written through.

use super::{SessionDir, TOOL_OUTPUTS_DIR, private_dir, real_dir, write_atomic};
use std::fs;
use std::io;

impl SessionDir {
    /// Store a tool output under `tool_outputs/` as the next `out_NNN_<tool>`; its id.
    pub fn write_tool_output(&self, tool: &str, text: &str) -> io::Result<String> {
        let dir = self.path(TOOL_OUTPUTS_DIR);
        match private_dir(&dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ if !real_dir(&dir) => return Err(io::Error::other("tool_outputs is not a folder")),
            _ => {}
        }
        let tool: String = tool.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect();
        let id = format!("out_{:03}_{tool}", self.tool_outputs()?.len() + 1);
        write_atomic(&dir.join(format!("{id}.txt")), text.as_bytes())?;
        Ok(id)
    }

    /// A stored tool output by id; `None` for an id that is not one (nothing outside the folder
    /// can be named: ids are letters, digits and `_`).
    pub fn read_tool_output(&self, id: &str) -> io::Result<Option<String>> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(None);
        }
        match fs::read_to_string(self.path(TOOL_OUTPUTS_DIR).join(format!("{id}.txt"))) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The ids of the stored tool outputs, in order, with their sizes in bytes.
    pub fn tool_outputs(&self) -> io::Result<Vec<(String, u64)>> {
        let entries = match fs::read_dir(self.path(TOOL_OUTPUTS_DIR)) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_suffix(".txt").filter(|n| n.starts_with("out_")) {
                out.push((id.to_string(), entry.metadata()?.len()));
            }
        }
        out.sort();
        Ok(out)
    }
}

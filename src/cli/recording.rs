//! `agent-controller recording ID [-o FILE]`: a session's recording (an animated GIF, a frame
//! per acting step, secret fields painted over) saved as a file, `ID.gif` unless told.
//!
//! Guarantees: the file is written whole or not at all (the client's download goes through a
//! temporary file); a session without a recording is the daemon's 404, said in its words.

use super::args::Parsed;
use super::client::{ApiClient, path_segment};
use super::common::{Out, exit, fail};
use std::path::PathBuf;

pub(super) fn run(client: &ApiClient, out: &Out, parsed: &Parsed) -> u8 {
    let id = &parsed.free[0];
    let default = || PathBuf::from(format!("{}.gif", crate::util::filename::sanitize_filename(id)));
    let dest = parsed.value("--out").map_or_else(default, PathBuf::from);
    match client.download(&format!("/sessions/{}/recording", path_segment(id)), &dest) {
        Ok(bytes) => {
            if out.json {
                println!("{}", serde_json::json!({"saved": dest, "bytes": bytes}));
            } else {
                println!("saved {} ({bytes} bytes)", dest.display());
            }
            exit::FINISHED
        }
        Err(e) => fail(e),
    }
}

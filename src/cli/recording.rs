//! `agent-controller recording ID [-o FILE]`: a session's recording (an animated GIF, a frame
//! per acting step, secret fields painted over) saved as a file, `ID.gif` unless told.
//!
//! Guarantees: the file is written whole or not at all (the client's download goes through a
//! temporary file); a session without a recording is the daemon's 404, said in its words.

use super::client::{ApiClient, path_segment};
use super::common::{Out, exit, fail};
use std::path::PathBuf;

pub(super) fn run(client: &ApiClient, out: &Out, mut args: pico_args::Arguments) -> u8 {
    let file: Option<PathBuf> = args.opt_value_from_str(["-o", "--out"]).unwrap_or(None);
    let free = args.finish();
    let Some(id) = free.first().and_then(|s| s.to_str()).map(str::to_string) else {
        eprintln!("agent-controller recording: give a session id (see `agent-controller sessions`)");
        return exit::USAGE;
    };
    let dest = file.unwrap_or_else(|| PathBuf::from(format!("{}.gif", crate::util::filename::sanitize_filename(&id))));
    match client.download(&format!("/sessions/{}/recording", path_segment(&id)), &dest) {
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

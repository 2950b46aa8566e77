//! `agent-controller export ID [--format playwright|sh] [-o FILE]`: `GET /sessions/ID/export`,
//! printed or written to FILE (through a temporary file, renamed when whole, made executable).
//! With `--json`, what was written (`{"saved", "bytes"}`) or the script (`{"script"}`).

use super::args::Parsed;
use super::client::{ApiClient, path_segment};
use super::common::{Out, exit, fail};
use serde_json::json;
use std::path::PathBuf;

/// The most of a script printed (the daemon makes them from a step log of bounded size).
const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

pub(super) fn run(client: &ApiClient, out: &Out, parsed: &Parsed) -> u8 {
    let query = parsed.value("--format").map_or_else(String::new, |f| format!("?format={}", path_segment(f)));
    let path = format!("/sessions/{}/export{query}", path_segment(&parsed.free[0]));
    let file = parsed.value("--out").map(PathBuf::from);
    let Some(file) = file else {
        return match client.get_bytes(&path, MAX_SCRIPT_BYTES) {
            Ok((bytes, _)) if out.json => {
                println!("{}", json!({"script": String::from_utf8_lossy(&bytes)}));
                exit::FINISHED
            }
            Ok((bytes, _)) => {
                print!("{}", String::from_utf8_lossy(&bytes));
                exit::FINISHED
            }
            Err(e) => fail(e),
        };
    };
    match client.download(&path, &file) {
        Ok(bytes) => {
            // A script to run: executable by its owner, readable by others (it holds no secret).
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755));
            if out.json {
                println!("{}", json!({"saved": file.display().to_string(), "bytes": bytes}));
            } else {
                println!("saved {} ({bytes} bytes)", file.display());
            }
            exit::FINISHED
        }
        Err(e) => fail(e),
    }
}

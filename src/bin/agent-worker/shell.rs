//! The shell backend: run_command, read_file, write_file, list_dir.
//!
//! Commands run under `sh -c` in their own process group, with no stdin and `PAGER=cat`, so
//! nothing waits for a terminal; on timeout the whole group is killed. Output is ANSI-stripped
//! and capped; the model is told when it was cut.

use serde_json::{Value, json};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OUTPUT_CAP: usize = 64 * 1024;
/// The running command's process group, for the signal handler.
pub static SHELL_PGID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
const READ_CAP: u64 = 256 * 1024;

pub fn execute(action: &str, p: &Value) -> Result<Value, String> {
    match action {
        "run_command" => run_command(p),
        "read_file" => read_file(p),
        "write_file" => write_file(p),
        "list_dir" => list_dir(p),
        other => Err(format!("this worker's shell cannot do `{other}`")),
    }
}

fn str_arg<'a>(p: &'a Value, name: &str) -> Result<&'a str, String> {
    p[name].as_str().filter(|s| !s.is_empty()).ok_or_else(|| format!("missing `{name}`"))
}

/// Read a pipe to the end on its own thread, keeping the first `OUTPUT_CAP` bytes.
fn collect(mut pipe: impl Read + Send + 'static) -> crossbeam_channel::Receiver<(Vec<u8>, usize)> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut total = 0;
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n;
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send((kept, total));
    });
    rx
}

fn run_command(p: &Value) -> Result<Value, String> {
    let command = str_arg(p, "command")?;
    let timeout = Duration::from_secs(p["timeout_s"].as_u64().unwrap_or(60).clamp(1, 3600));
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.env("PAGER", "cat").env("GIT_PAGER", "cat").env("TERM", "dumb").env("DEBIAN_FRONTEND", "noninteractive");
    cmd.process_group(0);
    if let Some(cwd) = p["cwd"].as_str().filter(|s| !s.is_empty()) {
        if !Path::new(cwd).is_dir() {
            return Err(format!("cwd `{cwd}` is not a directory"));
        }
        cmd.current_dir(cwd);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start sh: {e}"))?;
    let pgid = child.id() as i32;
    SHELL_PGID.store(pgid, std::sync::atomic::Ordering::Release);
    let out = child.stdout.take().map(collect);
    let err = child.stderr.take().map(collect);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                // SAFETY: kill(2) on our own child's process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("waiting for the command failed: {e}")),
        }
    };
    // Anything left in the group (background children) goes too, so the pipes close.
    // SAFETY: as above; ESRCH when the group is already gone is fine.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    SHELL_PGID.store(0, std::sync::atomic::Ordering::Release);
    // A grandchild that left the group (setsid) may hold the pipe open for ever: wait a little
    // for the output, then give up on it rather than hang the worker.
    let read_deadline = Instant::now() + Duration::from_secs(2);
    let take = |rx: Option<crossbeam_channel::Receiver<(Vec<u8>, usize)>>| {
        rx.and_then(|rx| rx.recv_timeout(read_deadline.saturating_duration_since(Instant::now())).ok())
            .unwrap_or_default()
    };
    let (stdout, out_total) = take(out);
    let (stderr, err_total) = take(err);
    let mut result = json!({
        "exit_code": status.and_then(|s| s.code()),
        "stdout": strip_ansi(&String::from_utf8_lossy(&stdout)),
        "stderr": strip_ansi(&String::from_utf8_lossy(&stderr)),
        "duration_ms": started.elapsed().as_millis() as u64,
    });
    if timed_out {
        result["timed_out"] = json!(true);
        result["note"] = json!(format!("killed after {} s (the whole process group)", timeout.as_secs()));
    }
    if out_total > OUTPUT_CAP || err_total > OUTPUT_CAP {
        result["truncated"] = json!(format!(
            "output cut to {OUTPUT_CAP} bytes per stream (stdout {out_total}, stderr {err_total} bytes)"
        ));
    }
    Ok(result)
}

fn read_file(p: &Value) -> Result<Value, String> {
    let path = str_arg(p, "path")?;
    let cap = p["max_bytes"].as_u64().unwrap_or(READ_CAP).clamp(1, 4 * READ_CAP);
    // Only regular files: a FIFO or a device would block or never end.
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot open `{path}`: {e}"))?;
    if !meta.is_file() {
        return Err(format!("`{path}` is not a regular file"));
    }
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
    }
    .map_err(|e| format!("cannot open `{path}`: {e}"))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    Ok(json!({"path": path, "size": size, "content": String::from_utf8_lossy(&bytes), "truncated": size > cap}))
}

fn write_file(p: &Value) -> Result<Value, String> {
    let path = str_arg(p, "path")?;
    let content = p["content"].as_str().ok_or("missing `content`")?;
    std::fs::write(path, content).map_err(|e| format!("cannot write `{path}`: {e}"))?;
    Ok(json!({"path": path, "written": content.len()}))
}

fn list_dir(p: &Value) -> Result<Value, String> {
    let path = str_arg(p, "path")?;
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| format!("cannot list `{path}`: {e}"))?.flatten() {
        let meta = entry.metadata().ok();
        let kind = match meta.as_ref().map(|m| m.file_type()) {
            Some(t) if t.is_dir() => "dir",
            Some(t) if t.is_symlink() => "link",
            _ => "file",
        };
        entries.push(json!({"name": entry.file_name().to_string_lossy(), "type": kind, "size": meta.map(|m| m.len()).unwrap_or(0)}));
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let total = entries.len();
    entries.truncate(1000);
    Ok(json!({"path": path, "entries": entries, "total": total}))
}

/// Remove terminal escape sequences (CSI, OSC, two-byte escapes) and stray carriage returns.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' || (n == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            if n == '\u{1b}' {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            c => out.push(c),
        }
    }
    out
}

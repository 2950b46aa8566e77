//! The shell backend: run_command, read_file, write_file, list_dir on this machine.
//!
//! Commands run under `sh -c` in their own process group, with no stdin, `PAGER=cat` and an
//! environment cut to an allow-list (`hygiene::clean_env`: no token, no API key), so nothing
//! waits for a terminal; on timeout the whole group is killed, and after the command
//! ends whatever it left in its group is killed too. The running group is registered with
//! `signals` so a stop by signal takes it down. Output is ANSI-stripped and capped per stream;
//! the model is told when it was cut. Files are read only when regular (a FIFO or a device
//! would block or never end), and capped.

use crate::backend::{Backend, Context, any_str, required_str};
use crate::error::WorkerError;
use crate::signals;
use agent_controller::protocol::tools::Tool;
use agent_controller::util::ansi::strip_ansi;
use crossbeam_channel::Receiver;
use serde_json::{Value, json};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const OUTPUT_CAP: usize = 64 * 1024;
const READ_CAP: u64 = 256 * 1024;
/// The name the running command's process group is registered under.
const GROUP: &str = "shell";

pub struct Shell;

impl Backend for Shell {
    fn capability(&self) -> &'static str {
        "shell"
    }

    fn run(&mut self, tool: Tool, p: &Value, _ctx: &Context) -> Result<Value, WorkerError> {
        match tool {
            Tool::RunCommand => run_command(p),
            Tool::ReadFile => read_file(p),
            Tool::WriteFile => write_file(p),
            Tool::ListDir => list_dir(p),
            other => Err(WorkerError::Unsupported { backend: "shell", tool: other.name() }),
        }
    }

    /// Nothing outlives a command: each one's process group is gone when it returns.
    fn shutdown(&mut self) {}
}

/// What one output pipe gave: the first `OUTPUT_CAP` bytes and the total length.
type Collected = (Vec<u8>, usize);

/// Read a pipe to the end on its own thread, keeping the first `OUTPUT_CAP` bytes.
fn collect(mut pipe: impl Read + Send + 'static) -> Receiver<Collected> {
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

/// The command's process group: killed (with anything the command left in it) when dropped.
struct Group(i32);

impl Group {
    fn kill(&self) {
        // SAFETY: kill(2) on our own child's process group; ESRCH when it is already gone is fine.
        unsafe { libc::kill(-self.0, libc::SIGKILL) };
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
        signals::disown_group(GROUP);
    }
}

fn shell_command(p: &Value) -> Result<Command, WorkerError> {
    let command = required_str(p, "command")?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    crate::hygiene::clean_env(&mut cmd);
    cmd.process_group(0);
    if let Some(cwd) = p["cwd"].as_str().filter(|s| !s.is_empty()) {
        if !Path::new(cwd).is_dir() {
            return Err(WorkerError::bad(format!("cwd `{cwd}` is not a directory")));
        }
        cmd.current_dir(cwd);
    }
    Ok(cmd)
}

fn run_command(p: &Value) -> Result<Value, WorkerError> {
    let timeout = Duration::from_secs(p["timeout_s"].as_u64().unwrap_or(60).clamp(1, 3600));
    let mut cmd = shell_command(p)?;
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| WorkerError::io("cannot start sh", e))?;
    let group = Group(child.id() as i32);
    signals::own_group(GROUP, group.0);
    let out = child.stdout.take().map(collect);
    let err = child.stderr.take().map(collect);
    let (status, timed_out) = wait_or_kill(&mut child, &group, started, timeout)?;
    // Anything left in the group (background children) goes too, so the pipes close.
    drop(group);
    // A grandchild that left the group (setsid) may hold the pipe open for ever: wait a little
    // for the output, then give up on it rather than hang the worker.
    let read_deadline = Instant::now() + Duration::from_secs(2);
    let take = |rx: Option<Receiver<Collected>>| {
        rx.and_then(|rx| rx.recv_timeout(read_deadline.saturating_duration_since(Instant::now())).ok())
            .unwrap_or_default()
    };
    let (stdout, stderr) = (take(out), take(err));
    Ok(command_result(status, stdout, stderr, started, timed_out.then_some(timeout)))
}

/// Wait for the command; past `timeout`, kill its whole group. Says whether it timed out.
fn wait_or_kill(
    child: &mut Child,
    group: &Group,
    started: Instant,
    timeout: Duration,
) -> Result<(Option<ExitStatus>, bool), WorkerError> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok((Some(status), false)),
            Ok(None) if started.elapsed() >= timeout => {
                group.kill();
                return Ok((child.wait().ok(), true));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(WorkerError::io("waiting for the command failed", e)),
        }
    }
}

/// The result the model sees; `killed_after` is the timeout when the command was killed.
fn command_result(
    status: Option<ExitStatus>,
    (out, out_total): Collected,
    (err, err_total): Collected,
    started: Instant,
    killed_after: Option<Duration>,
) -> Value {
    let mut result = json!({
        "exit_code": status.and_then(|s| s.code()),
        "stdout": strip_ansi(&String::from_utf8_lossy(&out)),
        "stderr": strip_ansi(&String::from_utf8_lossy(&err)),
        "duration_ms": started.elapsed().as_millis() as u64,
    });
    if let Some(timeout) = killed_after {
        result["timed_out"] = json!(true);
        result["note"] = json!(format!("killed after {} s (the whole process group)", timeout.as_secs()));
    }
    if out_total > OUTPUT_CAP || err_total > OUTPUT_CAP {
        result["truncated"] = json!(format!(
            "output cut to {OUTPUT_CAP} bytes per stream (stdout {out_total}, stderr {err_total} bytes)"
        ));
    }
    result
}

fn cannot_open(path: &str, e: std::io::Error) -> WorkerError {
    WorkerError::io(format!("cannot open `{path}`"), e)
}

/// Entries looked at when searching for a missing file's name.
const SEARCH_ENTRIES: usize = 20_000;

/// Files named `name` under `dir`, breadth first, bounded: models guess paths, and the file they
/// mean is usually a few folders further down. Symbolic links are not followed.
fn same_name_under(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let (mut queue, mut found, mut seen) = (std::collections::VecDeque::from([dir.to_path_buf()]), Vec::new(), 0);
    while let Some(d) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SEARCH_ENTRIES || found.len() >= agent_controller::protocol::worker::same_name::MATCHES {
                return found;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() && !["/proc", "/sys", "/dev"].iter().any(|p| path.starts_with(p)) {
                queue.push_back(path);
            } else if kind.is_file() && entry.file_name() == name {
                found.push(path);
            }
        }
    }
    found
}

/// The files of `asked`'s name below the nearest folder that exists, and that folder.
fn search_same_name(asked: &str) -> Option<(Vec<std::path::PathBuf>, &std::path::Path)> {
    let name = std::path::Path::new(asked).file_name()?.to_string_lossy().into_owned();
    let dir = std::path::Path::new(asked).ancestors().skip(1).find(|d| d.is_dir())?;
    Some((same_name_under(dir, &name), dir))
}

fn read_file(p: &Value) -> Result<Value, WorkerError> {
    let asked = required_str(p, "path")?;
    match std::fs::metadata(asked) {
        // Only where the controller asks (its `same_name_read` unit).
        Err(e) if p["same_name"] == true && e.kind() == std::io::ErrorKind::NotFound => read_same_name(asked, e, p),
        _ => read_whole(asked, p),
    }
}

/// The missing `asked` read as the only file of its name below the nearest folder that exists;
/// none or several are said in the error.
fn read_same_name(asked: &str, e: std::io::Error, p: &Value) -> Result<Value, WorkerError> {
    use agent_controller::protocol::worker::same_name;
    let Some((found, dir)) = search_same_name(asked) else { return Err(cannot_open(asked, e)) };
    let below = dir.display().to_string();
    let found: Vec<String> = found.iter().map(|f| f.display().to_string()).collect();
    match found.as_slice() {
        [only] => {
            let mut read = read_whole(only, p)?;
            read["note"] = same_name::read_instead(asked, only, &below).into();
            Ok(read)
        }
        [] => Err(cannot_open(asked, e).noted(same_name::none_below(&below))),
        several => Err(cannot_open(asked, e).noted(same_name::several(several))),
    }
}

fn read_whole(path: &str, p: &Value) -> Result<Value, WorkerError> {
    let cap = p["max_bytes"].as_u64().unwrap_or(READ_CAP).clamp(1, 4 * READ_CAP);
    // Only regular files: a FIFO or a device would block or never end.
    let meta = std::fs::metadata(path).map_err(|e| cannot_open(path, e))?;
    if !meta.is_file() {
        return Err(WorkerError::bad(format!("`{path}` is not a regular file")));
    }
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
    }
    .map_err(|e| WorkerError::io(format!("cannot open `{path}`"), e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(|e| WorkerError::io(format!("cannot read `{path}`"), e))?;
    let content = String::from_utf8_lossy(&bytes);
    Ok(json!({"path": path, "size": size, "content": content, "truncated": size > cap}))
}

fn write_file(p: &Value) -> Result<Value, WorkerError> {
    let path = required_str(p, "path")?;
    let content = any_str(p, "content")?;
    let bytes = match p["encoding"].as_str() {
        Some("base64") => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(content)
                .map_err(|e| WorkerError::bad(format!("`content` is not valid base64: {e}")))?
        }
        _ => content.as_bytes().to_vec(),
    };
    std::fs::write(path, &bytes).map_err(|e| WorkerError::io(format!("cannot write `{path}`"), e))?;
    Ok(json!({"path": path, "written": bytes.len()}))
}

fn list_dir(p: &Value) -> Result<Value, WorkerError> {
    let path = required_str(p, "path")?;
    let mut entries = Vec::new();
    let dir = std::fs::read_dir(path).map_err(|e| WorkerError::io(format!("cannot list `{path}`"), e))?;
    for entry in dir.flatten() {
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

//! Shell sessions on any host the controller can `ssh` into, with no worker there.
//!
//! The system OpenSSH client does the work: `BatchMode=yes` (never a prompt), keys from
//! `ssh.identity_file`, host keys checked against the controller's own `known_hosts`
//! (`StrictHostKeyChecking=accept-new`: a new host is remembered, a changed key is refused),
//! and one multiplexed master connection per session that we start, own and stop, with its
//! control socket in a private 0700 folder. Each tool is one `ssh` run over that master with
//! its output captured (ANSI-free, capped), a timeout enforced on the host (`timeout`) and
//! here, and the session's stop ending the wait at once. A connection that drops is rebuilt
//! and the tool retried, three attempts in all, before the model is told.

use super::remote::{self, Flavor};
use super::{Answer, ExecError, Executor};
use crate::config::Config;
use crate::protocol::tools::Tool;
use crate::util::ansi::strip_ansi;
use crate::wait::stop::StopSignal;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes kept of each output stream.
const OUTPUT_CAP: usize = 1024 * 1024;
const ATTEMPTS: u32 = 3;

/// `ssh://user@host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: String,
    pub host: String,
    pub port: u16,
}

/// A target that is not `ssh://user@host[:port]` (or names a user or host that could pass
/// for an option); holds the target as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an SSH target looks like ssh://user@host or ssh://user@host:2222, not {0:?}")]
pub struct BadTarget(pub String);

/// Why an SSH session could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SshError {
    /// The target is not an `ssh://` target we accept.
    #[error(transparent)]
    Target(BadTarget),
    /// No private folder for the control socket could be made.
    #[error("cannot make a control folder: {0}")]
    ControlDir(#[source] std::io::Error),
    /// The `ssh` program could not be run.
    #[error("cannot run ssh: {0}")]
    Spawn(#[source] std::io::Error),
    /// ssh gave up connecting; what it said on stderr.
    #[error("{}", connect_error(.destination, *.port, .stderr))]
    Refused { destination: String, port: u16, stderr: String },
    /// The session was stopped while connecting.
    #[error("stopped while connecting")]
    Stopped,
    /// The master connection did not come up in time.
    #[error("ssh to {destination} did not connect within 20 s")]
    Slow { destination: String },
    /// Running the host probe failed.
    #[error(transparent)]
    Probe(ExecError),
    /// Neither `uname` nor `ver` answered; what the first said on stderr.
    #[error("cannot tell what {destination} runs (uname and ver both failed): {}", .stderr.trim())]
    UnknownHost { destination: String, stderr: String },
}

impl std::str::FromStr for SshTarget {
    type Err = BadTarget;

    fn from_str(target: &str) -> Result<SshTarget, BadTarget> {
        let bad = || BadTarget(target.to_string());
        let rest = target.trim().strip_prefix("ssh://").ok_or_else(bad)?.trim_end_matches('/');
        let (user, hostport) = rest.split_once('@').ok_or_else(bad)?;
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => {
                let (h, after) = v6.split_once(']').ok_or_else(bad)?;
                (h, after.strip_prefix(':'))
            }
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            },
        };
        let port = port.map_or(Ok(22), |p| p.parse::<u16>().map_err(|_| bad()))?;
        let fine = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-:".contains(c));
        if !fine(user) || !fine(host) || user.starts_with('-') || host.starts_with('-') || port == 0 {
            return Err(bad());
        }
        Ok(SshTarget { user: user.to_string(), host: host.to_string(), port })
    }
}

pub struct SshExecutor {
    target: SshTarget,
    /// Options every `ssh` run gets (identity, host keys, timeouts, the control socket).
    options: Vec<String>,
    control_dir: PathBuf,
    master: Mutex<Option<Child>>,
    flavor: Flavor,
    has_timeout: bool,
    briefing: String,
    stop: Arc<StopSignal>,
}

/// What one `ssh` run gave.
struct Output {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    truncated: bool,
}

impl Output {
    /// ssh's own failure (255 with its own message), not the remote command's.
    fn connection_failed(&self) -> bool {
        self.code == Some(255) && self.stdout.is_empty()
    }
}

impl SshExecutor {
    /// Connect (start the master), inspect the host once, and be ready; or say why not (the
    /// words end the session).
    pub fn connect(target: &str, config: &Config, stop: Arc<StopSignal>) -> Result<SshExecutor, SshError> {
        let target: SshTarget = target.parse().map_err(SshError::Target)?;
        let control_dir = crate::util::private_temp_dir("ac-ssh-").map_err(SshError::ControlDir)?;
        let known_hosts = config.known_hosts_path();
        let mut options = vec![
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            "StrictHostKeyChecking=accept-new".into(),
            "-o".into(),
            format!("UserKnownHostsFile={}", known_hosts.display()),
            "-o".into(),
            "GlobalKnownHostsFile=/dev/null".into(),
            // Readable entries, so an operator can see and remove a host's key.
            "-o".into(),
            "HashKnownHosts=no".into(),
            "-o".into(),
            format!("ConnectTimeout={}", config.ssh.connect_timeout_s),
            "-o".into(),
            "ServerAliveInterval=15".into(),
            "-o".into(),
            "ServerAliveCountMax=3".into(),
            "-o".into(),
            "LogLevel=ERROR".into(),
            "-o".into(),
            format!("ControlPath={}", control_dir.join("cm").display()),
            "-p".into(),
            target.port.to_string(),
        ];
        if !config.ssh.identity_file.as_os_str().is_empty() {
            options.extend([
                "-i".into(),
                config.ssh.identity_file.display().to_string(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ]);
        }
        let mut exec = SshExecutor {
            target,
            options,
            control_dir,
            master: Mutex::new(None),
            flavor: Flavor::Posix,
            has_timeout: false,
            briefing: String::new(),
            stop,
        };
        exec.start_master()?;
        exec.inspect()?;
        Ok(exec)
    }

    fn destination(&self) -> String {
        format!("{}@{}", self.target.user, self.target.host)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(&self.options).arg("-T");
        cmd
    }

    /// Start the multiplexing master and wait until its socket answers.
    fn start_master(&self) -> Result<(), SshError> {
        let mut master = self.master.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut old) = master.take() {
            let _ = old.kill();
            let _ = old.wait();
        }
        let mut child = self
            .command()
            .args(["-M", "-N", "-o", "ControlMaster=yes", "-o", "ControlPersist=no"])
            .arg(self.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(SshError::Spawn)?;
        let socket = self.control_dir.join("cm");
        for _ in 0..400 {
            if socket.exists() {
                *master = Some(child);
                return Ok(());
            }
            if let Ok(Some(_)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return Err(SshError::Refused { destination: self.destination(), port: self.target.port, stderr: err });
            }
            if self.stop.wait(Duration::from_millis(50)) {
                let _ = child.kill();
                return Err(SshError::Stopped);
            }
        }
        let _ = child.kill();
        Err(SshError::Slow { destination: self.destination() })
    }

    /// Learn the host's system, shell, `timeout` and sudo once; Windows if `uname` is not there.
    fn inspect(&mut self) -> Result<(), SshError> {
        let out = self.ssh_once(remote::PROBE, None, Duration::from_secs(30)).map_err(SshError::Probe)?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.code == Some(0) && !text.trim().is_empty() {
            (self.briefing, self.has_timeout) = remote::parse_probe(&text);
            return Ok(());
        }
        let ver = self.ssh_once("ver", None, Duration::from_secs(30)).map_err(SshError::Probe)?;
        let ver = String::from_utf8_lossy(&ver.stdout).trim().to_string();
        if ver.contains("Windows") {
            self.flavor = Flavor::Windows;
            self.briefing = format!("The host runs {ver}; commands run in cmd.exe (not a POSIX shell).");
            return Ok(());
        }
        Err(SshError::UnknownHost { destination: self.destination(), stderr: out.stderr })
    }

    /// One `ssh` run over the master: `remote` with `stdin`, at most `timeout`, or until a stop.
    fn ssh_once(&self, remote: &str, stdin: Option<&[u8]>, timeout: Duration) -> Result<Output, ExecError> {
        let mut child = self
            .command()
            .args(["-o", "ControlMaster=no"])
            .arg(self.destination())
            .arg("--")
            .arg(remote)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ExecError::Spawn { program: "ssh", source })?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let bytes = bytes.to_vec();
            std::thread::spawn(move || drop(pipe.write_all(&bytes)));
        }
        let out = child.stdout.take().map(collect);
        let err = child.stderr.take().map(collect);
        let pid = child.id();
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait().ok().and_then(|s| s.code()));
        });
        let stopped = self.stop.receiver();
        let code = crossbeam_channel::select! {
            recv(done_rx) -> code => code.ok().flatten(),
            recv(stopped) -> _ => { kill(pid); return Err(ExecError::Stopped) }
            default(timeout) => {
                kill(pid);
                return Err(ExecError::Timeout { action: "the command".into(), after: timeout });
            }
        };
        let take = |rx: Option<crossbeam_channel::Receiver<(Vec<u8>, bool)>>| {
            rx.and_then(|rx| rx.recv_timeout(Duration::from_secs(2)).ok()).unwrap_or_default()
        };
        let ((stdout, cut_out), (stderr, cut_err)) = (take(out), take(err));
        Ok(Output { code, stdout, stderr: String::from_utf8_lossy(&stderr).to_string(), truncated: cut_out || cut_err })
    }

    /// `ssh_once`, rebuilding a dropped connection: three attempts, then the model is told.
    fn ssh(&self, remote: &str, stdin: Option<&[u8]>, timeout: Duration) -> Result<Output, ExecError> {
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let out = self.ssh_once(remote, stdin, timeout)?;
            if !out.connection_failed() {
                return Ok(out);
            }
            last = out.stderr.trim().to_string();
            log::warn!("ssh to {} failed (attempt {attempt} of {ATTEMPTS}): {last}", self.destination());
            if attempt < ATTEMPTS {
                if self.stop.wait(Duration::from_secs(1)) {
                    return Err(ExecError::Stopped);
                }
                if let Err(e) = self.start_master() {
                    last = e.to_string();
                }
            }
        }
        Err(ExecError::Disconnected(format!(
            "the SSH connection to {} failed {ATTEMPTS} times: {last}",
            self.destination()
        )))
    }

    fn run_command(&self, p: &Value, timeout: Duration) -> Result<Value, ExecError> {
        let command = p["command"].as_str().unwrap_or("");
        let limit = p["timeout_s"].as_u64().unwrap_or(60).clamp(1, timeout.as_secs().max(1));
        let line = remote::run_line(self.flavor, command, p["cwd"].as_str(), limit, self.has_timeout)?;
        let started = std::time::Instant::now();
        let out = self.ssh(&line, None, Duration::from_secs(limit + 10))?;
        let mut result = json!({
            "exit_code": out.code,
            "stdout": strip_ansi(&String::from_utf8_lossy(&out.stdout)),
            "stderr": strip_ansi(&out.stderr),
            "duration_ms": started.elapsed().as_millis() as u64,
        });
        // coreutils `timeout` exits 124 (137 after its -k kill).
        if self.has_timeout && matches!(out.code, Some(124 | 137)) {
            result["timed_out"] = json!(true);
            result["note"] = json!(format!("killed after {limit} s on the host"));
        }
        if out.truncated {
            result["truncated"] = json!(format!("output cut to {OUTPUT_CAP} bytes per stream"));
        }
        Ok(result)
    }

    fn write_file(&self, p: &Value, timeout: Duration) -> Result<Value, ExecError> {
        let path = p["path"].as_str().unwrap_or("");
        let content = p["content"].as_str().unwrap_or("");
        let bytes = match p["encoding"].as_str() {
            Some("base64") => {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|source| ExecError::Encoding { field: "content", source })?
            }
            _ => content.as_bytes().to_vec(),
        };
        let out = self.ssh(&remote::write_line(self.flavor, path)?, Some(&bytes), timeout)?;
        if out.code != Some(0) {
            return Err(ExecError::Failed(format!("cannot write `{path}`: {}", strip_ansi(out.stderr.trim()))));
        }
        Ok(json!({"path": path, "written": bytes.len()}))
    }

    fn read_file(&self, p: &Value, timeout: Duration) -> Result<Value, ExecError> {
        match self.read_path(p, timeout) {
            // Only where the controller asks (its `same_name_read` unit), as the worker does.
            Err(ExecError::Failed(why)) if p["same_name"] == true && self.flavor == Flavor::Posix => {
                self.read_same_name(p, why, timeout)
            }
            other => other,
        }
    }

    /// The missing path read as the only file of its name below the nearest folder that exists;
    /// none or several are said in the error.
    fn read_same_name(&self, p: &Value, why: String, timeout: Duration) -> Result<Value, ExecError> {
        use crate::protocol::worker::same_name;
        let asked = p["path"].as_str().unwrap_or("");
        let Some((found, below)) = self.search_same_name(asked, timeout) else { return Err(ExecError::Failed(why)) };
        match found.as_slice() {
            [only] => {
                let mut read = self.read_path(&json!({"path": only, "max_bytes": p["max_bytes"]}), timeout)?;
                read["note"] = same_name::read_instead(asked, only, &below).into();
                Ok(read)
            }
            [] => Err(ExecError::Failed(format!("{why} ({})", same_name::none_below(&below)))),
            several => Err(ExecError::Failed(format!("{why} ({})", same_name::several(several)))),
        }
    }

    /// The files of `asked`'s name below its nearest folder that exists, and that folder.
    fn search_same_name(&self, asked: &str, timeout: Duration) -> Option<(Vec<String>, String)> {
        let out = self.ssh(&remote::same_name_line(asked)?, None, timeout).ok()?;
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        let below = lines.pop()?;
        Some((lines, below))
    }

    fn read_path(&self, p: &Value, timeout: Duration) -> Result<Value, ExecError> {
        let path = p["path"].as_str().unwrap_or("");
        let max = p["max_bytes"].as_u64().unwrap_or(256 * 1024).clamp(1, OUTPUT_CAP as u64 - 64);
        let out = self.ssh(&remote::read_line(self.flavor, path, max)?, None, timeout)?;
        if out.code != Some(0) {
            return Err(ExecError::Failed(format!("cannot read `{path}`: {}", strip_ansi(out.stderr.trim()))));
        }
        let (size, body) = match self.flavor {
            Flavor::Posix => {
                let split = out.stdout.iter().position(|b| *b == b'\n').unwrap_or(out.stdout.len());
                let size = String::from_utf8_lossy(&out.stdout[..split]).trim().parse::<u64>().unwrap_or(0);
                (size, out.stdout.get(split + 1..).unwrap_or_default().to_vec())
            }
            Flavor::Windows => (out.stdout.len() as u64, out.stdout),
        };
        let content = String::from_utf8_lossy(&body);
        Ok(json!({"path": path, "size": size, "content": content, "truncated": size > max}))
    }

    fn list_dir(&self, p: &Value, timeout: Duration) -> Result<Value, ExecError> {
        let path = p["path"].as_str().unwrap_or("");
        let out = self.ssh(&remote::list_line(self.flavor, path)?, None, timeout)?;
        if out.code != Some(0) {
            return Err(ExecError::Failed(format!("cannot list `{path}`: {}", strip_ansi(out.stderr.trim()))));
        }
        Ok(json!({"path": path, "listing": strip_ansi(&String::from_utf8_lossy(&out.stdout))}))
    }
}

impl Executor for SshExecutor {
    fn describe(&self) -> String {
        format!("ssh {}@{}:{}", self.target.user, self.target.host, self.target.port)
    }

    fn briefing(&self) -> Option<String> {
        Some(self.briefing.clone())
    }

    fn run(&self, action: &str, params: Value, timeout: Duration) -> Result<Answer, ExecError> {
        let ran = match Tool::from_name(action) {
            Some(Tool::RunCommand) => self.run_command(&params, timeout),
            Some(Tool::WriteFile) => self.write_file(&params, timeout),
            Some(Tool::ReadFile) => self.read_file(&params, timeout),
            Some(Tool::ListDir) => self.list_dir(&params, timeout),
            _ => Err(ExecError::Failed(format!("`{action}` cannot run over SSH; this session has shell tools only"))),
        };
        ran.map(Answer::from)
    }
}

impl Drop for SshExecutor {
    fn drop(&mut self) {
        if let Some(mut master) = self.master.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = master.kill();
            let _ = master.wait();
        }
        let _ = std::fs::remove_dir_all(&self.control_dir);
    }
}

/// A connection that failed, in words that say what to fix.
fn connect_error(destination: &str, port: u16, stderr: &str) -> String {
    let e = stderr.trim();
    let hint = if e.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") || e.contains("Host key verification failed") {
        "its host key differs from the one this controller knows (ssh.known_hosts): refused; if the change is expected, remove the old key from that file"
    } else if e.contains("Permission denied") {
        "authentication failed: the key (ssh.identity_file) is not accepted for that user"
    } else if e.contains("Connection refused") {
        "nothing accepts SSH connections on that port"
    } else if e.contains("timed out") {
        "the host did not answer (ssh.connect_timeout_s)"
    } else {
        "ssh could not connect"
    };
    let detail: String = e.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").chars().take(300).collect();
    format!("cannot connect to {destination} (port {port}): {hint} ({detail})")
}

fn kill(pid: u32) {
    // SAFETY: kill(2) on our own ssh child; ESRCH when it already ended is fine.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// Read a pipe to its end on a thread: the first `OUTPUT_CAP` bytes, and whether more came.
fn collect(mut pipe: impl Read + Send + 'static) -> crossbeam_channel::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let (mut kept, mut more, mut buf) = (Vec::new(), false, [0u8; 8192]);
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let room = OUTPUT_CAP.saturating_sub(kept.len());
            more |= n > room;
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        let _ = tx.send((kept, more));
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_or_say_the_shape() {
        let t = "ssh://deploy@web-1.example.com:2222".parse::<SshTarget>().unwrap();
        assert_eq!((t.user.as_str(), t.host.as_str(), t.port), ("deploy", "web-1.example.com", 2222));
        assert_eq!("ssh://root@[::1]".parse::<SshTarget>().unwrap().host, "::1");
        assert_eq!("ssh://a@h".parse::<SshTarget>().unwrap().port, 22);
        for bad in ["ssh://host", "ssh://-oProxyCommand=x@h", "ssh://a@h:0", "ssh://a@h:x", "http://a@h", "ssh://a b@h"]
        {
            assert!(bad.parse::<SshTarget>().is_err(), "{bad}");
        }
    }
}

//! The command lines the SSH executor sends: one builder per remote shell, unit-tested on their
//! strings (there is no Windows host to try them on).
//!
//! POSIX hosts get the command inside `sh -c '…'` with single-quote escaping (no heredocs, so
//! no quoting bugs), the no-pager environment, `timeout` when the host has it, and no stdin.
//! Windows OpenSSH hosts get `cmd`: no environment prefix, no PTY, paths in double quotes (a
//! path with a double quote in it is refused rather than mangled). File contents always
//! travel on stdin, byte for byte.

use crate::util::ansi::NO_PAGER_ENV;

/// Which shell answers on the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Posix,
    Windows,
}

/// A path the remote shell could not be handed safely; it is refused, not mangled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuoteError {
    /// A double quote in a path for `cmd`.
    #[error("a path with a double quote cannot be passed to cmd safely: {0}")]
    DoubleQuote(String),
    /// A single quote in a path for PowerShell's single-quoted string.
    #[error("a path with a single quote cannot be passed to PowerShell safely: {0}")]
    SingleQuote(String),
}

/// `'…'` for sh: every `'` becomes `'\''`.
pub fn quote_posix(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quote_windows(s: &str) -> Result<String, QuoteError> {
    if s.contains('"') {
        return Err(QuoteError::DoubleQuote(s.to_string()));
    }
    Ok(format!("\"{s}\""))
}

/// Run `command` (in `cwd`), killed on the host after `timeout_s` when it has `timeout`.
pub fn run_line(
    flavor: Flavor,
    command: &str,
    cwd: Option<&str>,
    timeout_s: u64,
    has_timeout: bool,
) -> Result<String, QuoteError> {
    match flavor {
        Flavor::Posix => {
            let env: Vec<String> = NO_PAGER_ENV.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let limit = if has_timeout { format!("timeout -k 5 {timeout_s} ") } else { String::new() };
            let cd = cwd.map(|d| format!("cd {} && ", quote_posix(d))).unwrap_or_default();
            Ok(format!("{cd}env {} {limit}sh -c {} </dev/null", env.join(" "), quote_posix(command)))
        }
        Flavor::Windows => {
            let cd = match cwd {
                Some(d) => format!("cd /d {} && ", quote_windows(d)?),
                None => String::new(),
            };
            Ok(format!("{cd}{command}"))
        }
    }
}

/// Write stdin to `path`, whatever its bytes.
pub fn write_line(flavor: Flavor, path: &str) -> Result<String, QuoteError> {
    match flavor {
        Flavor::Posix => Ok(format!("cat > {}", quote_posix(path))),
        Flavor::Windows => {
            // Inside PowerShell's single-quoted string a `'` would end it early.
            if path.contains('\'') {
                return Err(QuoteError::SingleQuote(path.to_string()));
            }
            let p = quote_windows(path)?.replace('"', "'");
            Ok(format!(
                "powershell -NoProfile -NonInteractive -Command \"$i=[Console]::OpenStandardInput(); \
                 $f=[IO.File]::Create({p}); $i.CopyTo($f); $f.Close()\""
            ))
        }
    }
}

/// The first `max` bytes of `path`, and (POSIX) its size on the first line.
pub fn read_line(flavor: Flavor, path: &str, max: u64) -> Result<String, QuoteError> {
    match flavor {
        Flavor::Posix => {
            let q = quote_posix(path);
            Ok(format!(
                "test -f {q} || {{ echo \"not a regular file: \"{q} >&2; exit 1; }}; wc -c < {q}; head -c {max} {q}"
            ))
        }
        Flavor::Windows => Ok(format!("type {}", quote_windows(path)?)),
    }
}

/// The files named as `path`'s last part below its nearest folder that exists (POSIX hosts; at
/// most `same_name::MATCHES`, in at most 5 s where `timeout` exists), one per line, then that
/// folder's path last; nothing where the path exists (a folder, a file it may not read) or a
/// relative path climbs to the working folder, as the worker's search (`shell.rs`).
pub fn same_name_line(path: &str) -> Option<String> {
    // A name with a pattern's characters would match others than itself.
    let name = path
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty() && *n != "." && *n != ".." && !n.contains(['*', '?', '[', '\\']))?;
    let relative = !path.starts_with('/') && !path.starts_with("./");
    Some(format!(
        "[ -e {p} ] && exit 0; d=$(dirname -- {p}); while [ ! -d \"$d\" ]; do d=$(dirname -- \"$d\"); done; \
         {stop}t=; command -v timeout >/dev/null 2>&1 && t='timeout 5'; \
         $t find \"$d\" -xdev -type f -name {n} 2>/dev/null | head -n {m}; echo \"$d\"",
        p = quote_posix(path),
        n = quote_posix(name),
        m = crate::protocol::worker::same_name::MATCHES,
        stop = if relative { "[ \"$d\" = . ] && exit 0; " } else { "" },
    ))
}

pub fn list_line(flavor: Flavor, path: &str) -> Result<String, QuoteError> {
    match flavor {
        Flavor::Posix => Ok(format!("ls -la -- {}", quote_posix(path))),
        Flavor::Windows => Ok(format!("dir {}", quote_windows(path)?)),
    }
}

/// What the host is: one line per fact, read by `parse_probe`.
pub const PROBE: &str = "uname -srm; echo \"shell=$SHELL\"; \
    if command -v timeout >/dev/null 2>&1; then echo timeout=yes; fi; \
    if sudo -n true >/dev/null 2>&1; then echo sudo=yes; else echo sudo=no; fi";

/// The host as the model is told about it, and whether `timeout` is there.
pub fn parse_probe(out: &str) -> (String, bool) {
    let mut lines = out.lines();
    let system = lines.next().unwrap_or("").trim().to_string();
    let mut shell = String::from("unknown");
    let (mut timeout, mut sudo) = (false, false);
    for line in lines {
        match line.trim().split_once('=') {
            Some(("shell", s)) if !s.is_empty() => shell = s.to_string(),
            Some(("timeout", "yes")) => timeout = true,
            Some(("sudo", "yes")) => sudo = true,
            _ => {}
        }
    }
    let sudo = if sudo { "works without a password" } else { "needs a password (do not use it)" };
    (format!("The host runs {system}; login shell {shell}; sudo {sudo}."), timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_same_name_search_quotes_its_path_and_refuses_a_pattern() {
        let line = same_name_line("/srv/it's here/notes.txt").unwrap();
        assert!(line.contains(r"'/srv/it'\''s here/notes.txt'") && line.contains("-name 'notes.txt'"), "{line}");
        assert_eq!(same_name_line("/srv/*.txt"), None);
        assert_eq!(same_name_line("/srv/"), None);
    }

    /// The line run by a real `sh`: it searches only for a path that does not exist, and a
    /// relative one only below a folder it names (as the worker's search).
    #[test]
    fn a_same_name_search_runs_only_for_a_missing_path() {
        let root = std::env::temp_dir().join(format!("same-name-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(root.join("sub/deep/notes.txt"), "x").unwrap();
        let run = |path: &str| {
            let line = same_name_line(path).unwrap();
            let out = std::process::Command::new("sh").arg("-c").arg(&line).current_dir(&root).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let base = root.display();
        assert_eq!(run(&format!("{base}/nope/notes.txt")), format!("{base}/sub/deep/notes.txt\n{base}\n"));
        assert_eq!(run(&format!("{base}/sub")), "", "a folder that exists is no missing file");
        assert_eq!(run("notes.txt"), "", "a bare name has no folder to search");
        assert_eq!(run("sub/none/notes.txt"), "sub/deep/notes.txt\nsub\n");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn posix_lines_quote_everything() {
        let cmd = r#"echo "it's $HOME" `date` && cat 'a b'"#;
        let line = run_line(Flavor::Posix, cmd, Some("/tmp/o'dir"), 30, true).unwrap();
        assert!(line.starts_with(r"cd '/tmp/o'\''dir' && env PAGER=cat SYSTEMD_PAGER=cat GIT_PAGER=cat"), "{line}");
        assert!(
            line.contains(r#"timeout -k 5 30 sh -c 'echo "it'\''s $HOME" `date` && cat '\''a b'\''' </dev/null"#),
            "{line}"
        );
        assert!(!run_line(Flavor::Posix, "ls", None, 30, false).unwrap().contains("timeout"));
        assert_eq!(write_line(Flavor::Posix, "/tmp/$x").unwrap(), "cat > '/tmp/$x'");
        assert!(list_line(Flavor::Posix, "-rf").unwrap().ends_with("-- '-rf'"));
    }

    #[test]
    fn windows_lines_use_cmd_without_a_posix_prefix() {
        let line = run_line(Flavor::Windows, "dir /b", Some(r"C:\Users\me"), 30, false).unwrap();
        assert_eq!(line, r#"cd /d "C:\Users\me" && dir /b"#);
        assert!(!line.contains("env ") && !line.contains("sh -c"));
        assert_eq!(run_line(Flavor::Windows, "ver", None, 30, true).unwrap(), "ver");
        assert!(write_line(Flavor::Windows, r"C:\t\a.txt").unwrap().starts_with("powershell -NoProfile"));
        assert!(write_line(Flavor::Windows, r"C:\t\a'; rm x; '.txt").is_err(), "no way out of the string");
        assert_eq!(read_line(Flavor::Windows, r"C:\a.txt", 10).unwrap(), r#"type "C:\a.txt""#);
        assert!(run_line(Flavor::Windows, "x", Some("C:\\a\"b"), 1, false).is_err());
    }

    #[test]
    fn the_probe_is_read() {
        let (brief, timeout) = parse_probe("Linux 6.1.0 x86_64\nshell=/bin/bash\ntimeout=yes\nsudo=no\n");
        assert!(brief.contains("Linux 6.1.0") && brief.contains("/bin/bash") && brief.contains("needs a password"));
        assert!(timeout);
    }
}

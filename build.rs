//! Build script: embeds the git commit the binaries are built from as `AC_GIT_COMMIT` (for
//! `agent-controller --version`), from `$AC_GIT_COMMIT` when set (source tarballs, CI) or
//! `git rev-parse`. No git, no repository: the version says "commit unknown". Reruns only when
//! HEAD or the branch it points to moves. Also writes the web page's text files into `OUT_DIR`
//! as the binary carries them: without indentation, blank lines and whole-line `//` comments
//! (the sources stay readable; the daemon's binary is 5.6 KB smaller).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The web page's text files (`src/http/web/assets/`), trimmed into `OUT_DIR`. None has a
/// multi-line string or `<pre>`, where leading spaces would matter.
fn trim_web_assets() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    for name in ["index.html", "dom.js", "app.js", "takeover.js", "app.css"] {
        let src = Path::new("src/http/web/assets").join(name);
        println!("cargo:rerun-if-changed={}", src.display());
        let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let js = name.ends_with(".js");
        let kept: Vec<&str> =
            text.lines().map(str::trim_start).filter(|l| !(l.is_empty() || js && l.starts_with("//"))).collect();
        if let Err(e) = std::fs::write(out.join(name), kept.join("\n") + "\n") {
            panic!("{name}: {e}");
        }
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    trim_web_assets();
    println!("cargo:rerun-if-env-changed=AC_GIT_COMMIT");
    let commit = std::env::var("AC_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=AC_GIT_COMMIT={commit}");
    }
    if let (Some(git_dir), Some(common)) = (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"])) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={common}/packed-refs");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={common}/{branch}");
        }
    }
}

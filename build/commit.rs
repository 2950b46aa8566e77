//! The git commit the binaries are built from, for `--version`: `$AC_GIT_COMMIT` when set
//! (source tarballs, CI), else `git rev-parse`; nothing without git or a repository.
//!
//! Invariant: every path given to `cargo:rerun-if-changed` exists. Cargo takes a missing path
//! for a changed one, reruns the script on every build and so rebuilds the whole package (with
//! LTO, minutes) although nothing changed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The files that change when HEAD's commit moves, of those that exist: HEAD itself, the branch's
/// loose ref, or — for a branch kept only in `packed-refs` — that file and the folder a new
/// commit writes the loose ref into.
fn head_files(git_dir: &Path, common: &Path, branch: Option<&str>) -> Vec<PathBuf> {
    let mut files = vec![git_dir.join("HEAD")];
    if let Some(branch) = branch {
        let loose = common.join(branch);
        if loose.is_file() {
            files.push(loose);
        } else {
            files.push(common.join("packed-refs"));
            files.extend(loose.parent().map(Path::to_path_buf));
        }
    }
    files.retain(|f| f.exists());
    files
}

/// Sets `AC_GIT_COMMIT` for the crate and says which files make the script run again.
pub fn embed() {
    println!("cargo:rerun-if-env-changed=AC_GIT_COMMIT");
    let commit = std::env::var("AC_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=AC_GIT_COMMIT={commit}");
    }
    if let (Some(git_dir), Some(common)) = (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"])) {
        let branch = git(&["symbolic-ref", "-q", "HEAD"]);
        for file in head_files(Path::new(&git_dir), Path::new(&common), branch.as_deref()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
}

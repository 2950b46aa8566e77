//! Build script: embeds the git commit the binaries are built from as `AC_GIT_COMMIT` (for
//! `agent-controller --version`), from `$AC_GIT_COMMIT` when set (source tarballs, CI) or
//! `git rev-parse`. No git, no repository: the version says "commit unknown". Reruns only when
//! HEAD or the branch it points to moves.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
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

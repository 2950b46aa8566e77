//! The build script's git watch (`build/commit.rs`): a second build with nothing changed is a
//! no-op, whether the branch's ref is loose (never packed) or lives only in `packed-refs`, and a
//! new commit still reaches the binary. Run on a tiny crate whose build script is that file.

use std::path::Path;
use std::process::Command;

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("AC_GIT_COMMIT")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{program} {args:?}: {text}");
    text
}

fn commit(dir: &Path, message: &str) {
    std::fs::write(dir.join("note.txt"), message).unwrap();
    run(dir, "git", &["add", "-A"]);
    run(dir, "git", &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message]);
}

/// Whether a `cargo build -v` recompiled the crate (else every unit was `Fresh`).
fn rebuilt(dir: &Path) -> bool {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(dir, &cargo, &["build", "-v", "--offline"]).contains("Compiling probe")
}

fn crate_in_repo() -> tempfile_dir::Dir {
    let dir = tempfile_dir::Dir::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/commit.rs");
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("build.rs"),
        format!("#[path = {:?}]\nmod commit;\nfn main() {{ commit::embed(); }}\n", script.display().to_string()),
    )
    .unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() { println!(\"{}\", env!(\"AC_GIT_COMMIT\")); }\n")
        .unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target\n").unwrap();
    run(dir.path(), "git", &["init", "-q", "-b", "main"]);
    commit(dir.path(), "first");
    dir
}

#[test]
fn a_second_build_is_a_no_op_with_a_loose_ref_and_with_packed_refs_only() {
    let repo = crate_in_repo();
    let dir = repo.path();
    assert!(!dir.join(".git/packed-refs").exists(), "a repository whose refs were never packed");
    assert!(rebuilt(dir), "the first build compiles");
    assert!(!rebuilt(dir), "a second build with nothing changed recompiles nothing");
    commit(dir, "second");
    assert!(rebuilt(dir), "a new commit reaches the binary");
    assert!(!rebuilt(dir));

    run(dir, "git", &["pack-refs", "--all"]);
    assert!(!dir.join(".git/refs/heads/main").exists(), "the branch lives only in packed-refs");
    rebuilt(dir); // the loose ref it watched is gone: one rerun is allowed
    assert!(!rebuilt(dir), "packed refs only: a second build recompiles nothing");
    commit(dir, "third");
    assert!(rebuilt(dir), "a commit on a packed branch (a new loose ref) reaches the binary");
    let head = run(dir, "git", &["rev-parse", "--short=12", "HEAD"]);
    let shown = run(dir, &dir.join("target/debug/probe").display().to_string(), &[]);
    assert_eq!(shown.trim(), head.trim(), "the binary carries HEAD's commit");
}

/// A private temporary folder removed at the end (the tests' support has one for the daemon; this
/// module stays independent of it).
mod tempfile_dir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            Dir(agent_controller::util::private_temp_dir("build-script-").unwrap())
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

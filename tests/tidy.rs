//! Repository hygiene checked by `cargo test`, as rust-analyzer's tidy does: every source file
//! says what it is for, stays small, and imports only across the seams ARCHITECTURE.md allows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each module of the library may import (`crate::…`) besides itself. Read top-down:
/// small shared helpers first, the HTTP layer and the wiring last. Mirrored in ARCHITECTURE.md.
const ALLOWED: &[(&str, &[&str])] = &[
    ("util", &[]),
    ("wait", &[]),
    ("error", &[]),
    ("protocol", &["util"]),
    ("vault", &["protocol", "util"]),
    ("config", &["protocol", "util"]),
    ("exec", &["config", "protocol", "util", "wait"]),
    ("store", &["protocol", "util"]),
    ("notify", &["protocol", "util"]),
    ("llm", &["config", "util", "wait"]),
    ("hub", &["exec", "protocol", "util", "wait"]),
    ("session", &["config", "error", "exec", "hub", "protocol", "store", "util", "vault", "wait"]),
    ("agent", &["config", "exec", "llm", "notify", "protocol", "session", "util", "vault", "wait"]),
    ("schedule", &["config", "error", "notify", "protocol", "session", "store", "util", "vault"]),
    ("http", &["config", "error", "hub", "protocol", "schedule", "session", "store", "util", "wait"]),
    ("cli", &["protocol", "util"]),
    ("daemon", &["config", "http", "hub", "schedule", "session", "store", "wait"]),
    ("eval", &["agent", "cli", "config", "daemon", "store", "util"]),
];

/// Functions that are tables (one arm per tool), exempt from the length limit.
const TABLES: &[&str] = &["pub fn spec(self) -> Spec"];
const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn files_under(dir: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join(dir), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root()).unwrap().to_string_lossy().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The code before the unit tests: imports there are what the module needs.
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// Top-level names after `prefix` (`crate::` or `agent_controller::`), grouped imports too.
fn imported(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// `src/session/log.rs` → `session`; `src/daemon.rs` → `daemon`.
fn module_of(rel: &str) -> Option<String> {
    let inside = rel.strip_prefix("src/")?;
    if inside.starts_with("bin/") || inside == "lib.rs" || inside == "main.rs" {
        return None;
    }
    Some(inside.split('/').next()?.trim_end_matches(".rs").to_string())
}

#[test]
fn every_file_starts_with_a_module_doc() {
    let mut missing = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for (rel, text) in files_under(dir) {
            if !text.trim_start().starts_with("//!") {
                missing.push(rel);
            }
        }
    }
    assert!(missing.is_empty(), "files without a //! header: {missing:?}");
}

#[test]
fn files_and_functions_stay_small() {
    let mut long = Vec::new();
    for (rel, text) in files_under("src") {
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > MAX_FILE_LINES {
            long.push(format!("{rel}: {} lines", lines.len()));
        }
        for (i, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            let indent = &line[..line.len() - code.len()];
            let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "const fn ", "unsafe fn "]
                .iter()
                .any(|p| code.starts_with(p));
            if !is_fn || code.ends_with(';') || TABLES.iter().any(|t| code.starts_with(t)) {
                continue;
            }
            let end = lines[i..].iter().position(|l| *l == format!("{indent}}}")).unwrap_or(0);
            if end + 1 > MAX_FN_LINES {
                long.push(format!("{rel}:{}: {} lines: {code}", i + 1, end + 1));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines per file or {MAX_FN_LINES} per function:\n{}",
        long.join("\n")
    );
}

#[test]
fn modules_import_only_across_allowed_seams() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (rel, text) in files_under("src") {
        let Some(module) = module_of(&rel) else { continue };
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!("{rel}: module {module} is not in tidy.rs's ALLOWED table"));
            continue;
        };
        for name in imported(without_tests(&text), "crate::") {
            if name != module && !may.contains(&name.as_str()) {
                wrong.push(format!("{rel} imports crate::{name}"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports across seams ARCHITECTURE.md does not allow:\n{}", wrong.join("\n"));
}

#[test]
fn the_allowed_imports_have_no_cycles() {
    // Each module may only import modules listed before it.
    let order: Vec<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    for (i, (module, may)) in ALLOWED.iter().enumerate() {
        for dep in *may {
            let at = order.iter().position(|m| m == dep).unwrap_or(usize::MAX);
            assert!(at < i, "{module} may import {dep}, which comes later: a cycle is possible");
        }
    }
}

#[test]
fn only_the_http_layer_names_tiny_http() {
    let offenders: Vec<String> = files_under("src")
        .into_iter()
        .filter(|(rel, text)| !rel.starts_with("src/http/") && without_tests(text).contains("tiny_http::"))
        .map(|(rel, _)| rel)
        .collect();
    assert!(offenders.is_empty(), "tiny_http named outside src/http/: {offenders:?}");
}

#[test]
fn the_worker_shares_only_wire_types_and_small_helpers() {
    for (rel, text) in files_under("src/bin/agent-worker") {
        for name in imported(&text, "agent_controller::") {
            assert!(["protocol", "util"].contains(&name.as_str()), "{rel} imports agent_controller::{name}");
        }
    }
}

#[test]
fn architecture_codemap_names_every_file() {
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for (rel, _) in files_under("src") {
        let inside = rel.trim_start_matches("src/");
        if !arch.contains(&format!("`{inside}`")) {
            missing.push(inside.to_string());
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name: {missing:?}");
}

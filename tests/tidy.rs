//! Repository hygiene checked by `cargo test`, as rust-analyzer's tidy does: every source file
//! says what it is for, stays small, and imports only across the seams ARCHITECTURE.md allows.

mod names;

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
    ("export", &["protocol"]),
    ("llm", &["config", "util", "wait"]),
    ("hub", &["exec", "protocol", "util", "wait"]),
    ("session", &["config", "exec", "hub", "protocol", "store", "util", "vault", "wait"]),
    ("agent", &["config", "exec", "llm", "notify", "protocol", "session", "util", "vault", "wait"]),
    ("schedule", &["config", "notify", "protocol", "session", "store", "util", "vault"]),
    ("http", &["config", "error", "export", "hub", "protocol", "schedule", "session", "store", "util", "wait"]),
    ("cli", &["protocol", "util"]),
    ("daemon", &["config", "http", "hub", "schedule", "session", "store", "wait"]),
    ("eval", &["agent", "cli", "config", "daemon", "store", "util"]),
];

/// Functions that are tables (one arm per tool), exempt from the length limit.
const TABLES: &[&str] = &["pub fn spec(self) -> Spec", "pub fn row(self) -> Row"];
const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files_ending(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_ending(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// The Rust files under `dir`, with their text.
fn files_under(dir: &str) -> Vec<(String, String)> {
    with_ending(dir, "rs")
}

/// The files under `dir` whose names end in `.ext`, sorted, with their text.
fn with_ending(dir: &str, ext: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    files_ending(&root().join(dir), ext, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root()).unwrap().to_string_lossy().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// A file without its unit tests: a `#[cfg(test)]` module (`mod tests;` is skipped, an inline
/// `mod tests { … }` ends the file). Other `#[cfg(test)]` items stay: only a test module's
/// imports are not the module's own.
fn without_tests(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map(|l| l.trim_start()).unwrap_or("");
            if next.starts_with("mod ") || next.starts_with("pub mod ") {
                if next.ends_with(';') {
                    lines.next();
                    continue;
                }
                break;
            }
        }
        code.push_str(line);
        code.push('\n');
    }
    code
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

/// Test files too stay under the file limit (a test's function may run long: it is a story).
#[test]
fn test_files_stay_small() {
    let long: Vec<String> = ["tests", "benches"]
        .iter()
        .flat_map(|dir| files_under(dir))
        .filter(|(_, text)| text.lines().count() > MAX_FILE_LINES)
        .map(|(rel, text)| format!("{rel}: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines per file:\n{}", long.join("\n"));
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
        for name in imported(&without_tests(&text), "crate::") {
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

/// The folders under `dir` (itself included) that hold Rust or JavaScript source; test
/// fixtures are data, not source.
fn source_folders(dir: &Path, out: &mut Vec<String>) {
    if dir.file_name().is_some_and(|n| n == "fixtures") {
        return;
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    let holds_source = entries.iter().any(|p| p.extension().is_some_and(|e| e == "rs" || e == "js"));
    if holds_source {
        out.push(dir.strip_prefix(root()).unwrap().to_string_lossy().to_string());
    }
    for sub in entries.iter().filter(|p| p.is_dir()) {
        source_folders(sub, out);
    }
}

/// ARCHITECTURE.md is a map per folder (the files' `//!` headers are the map per file): every
/// folder of source has a section, a heading naming it as `` `src/agent/guards/` ``.
#[test]
fn architecture_has_a_section_per_source_folder() {
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let headings: Vec<&str> = arch.lines().filter(|l| l.starts_with('#')).collect();
    let mut folders = Vec::new();
    for dir in ["src", "tests", "benches"] {
        source_folders(&root().join(dir), &mut folders);
    }
    let missing: Vec<&String> =
        folders.iter().filter(|f| !headings.iter().any(|h| h.contains(&format!("`{f}/`")))).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md has no section (a heading naming it) for: {missing:?}");
}

/// Each module's section in ARCHITECTURE.md says what it may import, as `ALLOWED` does:
/// `**Imports:** a, b.` (or `nothing`), so the map and the checked table cannot drift.
#[test]
fn architecture_states_each_folders_imports_as_tidy_allows_them() {
    let arch = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut wrong = Vec::new();
    for (module, may) in ALLOWED.iter().filter(|(m, _)| root().join("src").join(m).is_dir()) {
        let heading = format!("### `src/{module}/`\n");
        let Some(at) = arch.find(&heading) else { continue };
        let section = &arch[at + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        let want = if may.is_empty() { "nothing".to_string() } else { may.join(", ") };
        if !section.contains(&format!("**Imports:** {want}.")) {
            wrong.push(format!("src/{module}/: **Imports:** {want}."));
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md's sections should say:\n{}", wrong.join("\n"));
}

/// The web page's scripts follow the rules the Rust files do: a header comment saying what the
/// file holds and guarantees, and at most `MAX_FILE_LINES` lines.
#[test]
fn javascript_files_start_with_a_header_and_stay_small() {
    let mut wrong = Vec::new();
    for (rel, text) in with_ending("src", "js") {
        let header: usize =
            text.lines().map_while(|l| l.strip_prefix("//")).map(|l| l.split_whitespace().count()).sum();
        if !(10..=MAX_HEADER_WORDS).contains(&header) {
            wrong.push(format!("{rel}: a header comment of {header} words (10 to {MAX_HEADER_WORDS})"));
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            wrong.push(format!("{rel}: {lines} lines"));
        }
    }
    assert!(wrong.is_empty(), "scripts without a header or over {MAX_FILE_LINES} lines:\n{}", wrong.join("\n"));
}

/// README's guard table has one row per guard of `protocol/guards.rs`, saying what the code does.
#[test]
fn the_readme_guard_table_agrees_with_the_code() {
    use agent_controller::protocol::guards::Guard;
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `") && l.matches(" | ").count() == 4).collect();
    for g in Guard::ALL {
        let row = g.row();
        let profiles: Vec<&str> = row.profiles.iter().map(|p| p.as_str()).collect();
        let want = format!(
            "| `{}` | {} | {} | {} | {} |",
            g.name(),
            row.stage.words(),
            row.kind.as_str(),
            profiles.join(", "),
            row.why
        );
        assert!(rows.contains(&want.as_str()), "README's guard table lacks or differs on:\n{want}");
    }
    let named = rows.iter().filter(|l| Guard::from_name(l.split('`').nth(1).unwrap_or("")).is_some()).count();
    assert_eq!(named, Guard::ALL.len(), "one row per guard");
    // And no row of the table names a guard that is gone.
    let table = readme.lines().skip_while(|l| !l.starts_with("| guard |")).skip(2).take_while(|l| l.starts_with('|'));
    let stale: Vec<&str> =
        table.map(|l| l.split('`').nth(1).unwrap_or(l)).filter(|name| Guard::from_name(name).is_none()).collect();
    assert!(stale.is_empty(), "README's guard table names guards the code does not have: {stale:?}");
}

/// Every guard has a test named for it (`guard_login_hint_fires_on_…`, `…_is_quiet_on_…`), so a
/// guard added without tests fails here: each is tested on the case it was written for and on
/// one it was not, where it must do no harm (issue 38).
#[test]
fn every_guard_has_a_test_named_for_it() {
    use agent_controller::protocol::guards::Guard;
    let mut tests = Vec::new();
    for (_, text) in files_under("src").into_iter().chain(files_under("tests")) {
        let mut after_test = false;
        for line in text.lines().map(str::trim) {
            if let Some(signature) = line.strip_prefix("fn ").filter(|_| after_test) {
                tests.push(signature.split('(').next().unwrap_or_default().to_string());
            }
            after_test = line == "#[test]" || (after_test && line.starts_with("#["));
        }
    }
    let untested: Vec<&str> =
        Guard::ALL.iter().map(|g| g.name()).filter(|name| !tests.iter().any(|t| t.contains(name))).collect();
    assert!(untested.is_empty(), "guards without a test named for them: {untested:?}");
}

/// A `//!` header says what a file is for and what it guarantees, in a few lines; history
/// belongs in commit messages.
const MAX_HEADER_WORDS: usize = 200;

/// Where a file sits in its crate: the crate root's folder and the module path below it
/// (`src/cli/mcp/tools.rs` → `src/`, `[cli, mcp, tools]`; a `mod.rs` is its folder's module).
fn module_path(rel: &str) -> (String, Vec<String>) {
    let inside = rel.strip_prefix("src/").unwrap_or(rel);
    let (root, inside) = match inside.strip_prefix("bin/").and_then(|b| b.split_once('/')) {
        Some((bin, rest)) => (format!("src/bin/{bin}/"), rest),
        None => ("src/".to_string(), inside),
    };
    let mut segs: Vec<String> = inside.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(segs.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        segs.pop();
    }
    (root, segs)
}

/// The code a file's own module compiles: line comments dropped, and the unit tests left out
/// (`without_tests`), since a test module importing its parent is no circle.
fn code_of(text: &str) -> String {
    without_tests(text).lines().map(|line| line.split("//").next().unwrap_or("")).fold(String::new(), |mut code, l| {
        code.push_str(l);
        code.push('\n');
        code
    })
}

fn skip_space(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Reads one path tree at `i` (`a::b`, `a::{b, c::{d, self}}`, `a::*`, `a as b`), pushing each
/// full path below `path`; returns where it ended.
fn path_tree(s: &[u8], mut i: usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        i = skip_space(s, i);
        if s.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_space(s, i);
                match s.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(b',') => i += 1,
                    _ => {
                        let before = i;
                        i = path_tree(s, i, path.clone(), out);
                        i = i.max(before + 1);
                    }
                }
            }
        }
        let start = i;
        while s.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            i += 1;
        }
        let seg = String::from_utf8_lossy(&s[start..i]).to_string();
        if !seg.is_empty() && seg != "self" {
            path.push(seg);
        }
        let after = skip_space(s, i);
        if s[after..].starts_with(b"::") {
            i = after + 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// Every path a file names through `crate::`, `self::` or `super::` (in `use` or in code),
/// resolved to a module path from its crate's root.
fn named_paths(rel: &str, text: &str) -> Vec<Vec<String>> {
    let (_, own) = module_path(rel);
    let code = code_of(text);
    let s = code.as_bytes();
    let mut out = Vec::new();
    for start in 0..s.len() {
        let before = start.checked_sub(1).map(|b| s[b]);
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':' || c == b'$') {
            continue;
        }
        // `pub(in crate::http)` is a visibility, not an import.
        if s[..start].ends_with(b"(in ") {
            continue;
        }
        let mut base = match &s[start..] {
            r if r.starts_with(b"crate::") => Vec::new(),
            r if r.starts_with(b"self::") || r.starts_with(b"super::") => own.clone(),
            _ => continue,
        };
        let mut i = start;
        if s[i..].starts_with(b"crate::") {
            i += "crate::".len();
        } else if s[i..].starts_with(b"self::") {
            i += "self::".len();
        }
        while s[i..].starts_with(b"super::") {
            base.pop();
            i += "super::".len();
        }
        path_tree(s, i, base, &mut out);
    }
    out
}

/// Which files each file imports from: the file holding the longest prefix of each path it
/// names (`crate::cli::console::Out` → `src/cli/console.rs`), itself left out.
fn file_imports() -> BTreeMap<String, BTreeSet<String>> {
    let files = files_under("src");
    let by_module: BTreeMap<(String, Vec<String>), String> =
        files.iter().map(|(rel, _)| (module_path(rel), rel.clone())).collect();
    let mut imports = BTreeMap::new();
    for (rel, text) in &files {
        let (root, _) = module_path(rel);
        let mut from = BTreeSet::new();
        for path in named_paths(rel, text) {
            let found = (0..=path.len()).rev().find_map(|n| by_module.get(&(root.clone(), path[..n].to_vec())));
            if let Some(file) = found.filter(|f| *f != rel) {
                from.insert(file.clone());
            }
        }
        imports.insert(rel.clone(), from);
    }
    imports
}

#[test]
fn no_two_files_import_each_other() {
    let imports = file_imports();
    let mut circles = BTreeSet::new();
    for (a, from) in &imports {
        for b in from {
            if a < b && imports.get(b).is_some_and(|back| back.contains(a)) {
                circles.insert((a.as_str(), b.as_str()));
            }
        }
    }
    let found: Vec<String> = circles.iter().map(|(a, b)| format!("{a} <-> {b}")).collect();
    assert!(
        found.is_empty(),
        "files that import each other (move what both need into a file of its own):\n{}",
        found.join("\n")
    );
}

/// The words of a file's `//!` header: its leading `//!` lines.
fn header_words(text: &str) -> usize {
    text.lines().map_while(|l| l.strip_prefix("//!")).map(|l| l.split_whitespace().count()).sum()
}

#[test]
fn module_headers_stay_short() {
    let mut long = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for (rel, text) in files_under(dir) {
            let words = header_words(&text);
            if words > MAX_HEADER_WORDS {
                long.push(format!("{rel}: {words} words"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "//! headers over {MAX_HEADER_WORDS} words (purpose and guarantees only):\n{}",
        long.join("\n")
    );
}

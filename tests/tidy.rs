//! Repository hygiene checked by `cargo test`: every source file says what it is for.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_file_starts_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    let missing: Vec<_> =
        files.iter().filter(|p| !std::fs::read_to_string(p).unwrap().trim_start().starts_with("//!")).collect();
    assert!(missing.is_empty(), "files without a //! header: {missing:?}");
}

#[test]
fn architecture_codemap_names_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let arch = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".rs") && name != "lib.rs" {
            assert!(arch.contains(&format!("`{name}`")), "ARCHITECTURE.md does not mention {name}");
        }
    }
}

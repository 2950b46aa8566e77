//! Build script: embeds the git commit the binaries are built from as `AC_GIT_COMMIT` (for
//! `agent-controller --version`; `build/commit.rs`, which reruns the script only when HEAD or its
//! branch moves; no repository: "commit unknown"). Also writes the web page's text files into `OUT_DIR`
//! as the binary carries them: without indentation, blank lines and whole-line `//` comments
//! (the sources stay readable; the daemon's binary is 5.6 KB smaller).

#[path = "build/commit.rs"]
mod commit;

use std::path::{Path, PathBuf};

/// The web page's text files (`src/http/web/assets/`), trimmed into `OUT_DIR`. None has a
/// multi-line string or `<pre>`, where leading spaces would matter.
fn trim_web_assets() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    for name in ["index.html", "dom.js", "app.js", "list.js", "takeover.js", "handover.js", "recording.js", "app.css"] {
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

fn main() {
    trim_web_assets();
    commit::embed();
}

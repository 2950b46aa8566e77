//! The MiniWoB++ package, fetched at eval time and kept: `pip download` of the one pinned
//! wheel (its sha256 checked by pip) into the cache (`$XDG_CACHE_HOME` or `~/.cache`, then
//! `agent-controller/miniwob/<version>/`), its `miniwob/html/` folder unpacked once and reused by
//! later runs. Nothing of the package is part of this repository. A folder is only ever seen
//! whole: it is unpacked beside its place and renamed into it.

use std::fmt;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// The package version the eval is made for (its pages, its `core.js`).
pub const VERSION: &str = "1.1.0";
/// The wheel's sha256 on PyPI: pip refuses any other bytes.
const WHEEL_SHA256: &str = "297006e84219d56ad037e843527ed773a4a82509dc43b6031ec4a3ad3e3e61d9";
/// What of the wheel is kept: the task pages and their scripts.
const HTML_PREFIX: &str = "miniwob/html/";

/// Why the package is not there.
#[derive(Debug)]
#[non_exhaustive]
pub enum FetchError {
    /// Neither `$XDG_CACHE_HOME` nor `$HOME` is set.
    NoCacheDir,
    /// The cache folder could not be written (the path, the error).
    Io(PathBuf, std::io::Error),
    /// No pip to run (`pip`, `pip3`, `python3 -m pip`).
    NoPip,
    /// pip ran and failed (the end of what it said).
    Download(String),
    /// The wheel pip left is not a zip with `miniwob/html/core/core.js`.
    BadWheel(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::NoCacheDir => {
                f.write_str("neither XDG_CACHE_HOME nor HOME is set: no cache for the MiniWoB++ package")
            }
            FetchError::Io(path, e) => write!(f, "{}: {e}", path.display()),
            FetchError::NoPip => write!(
                f,
                "the miniwob suite needs pip once, to fetch the MiniWoB++ package (pip download miniwob=={VERSION} --no-deps); \
                 install pip (e.g. apt-get install python3-pip)"
            ),
            FetchError::Download(said) => write!(f, "pip download miniwob=={VERSION} failed: {said}"),
            FetchError::BadWheel(why) => write!(f, "the miniwob wheel: {why}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// The package's `html` folder (`core/`, `common/`, `miniwob/<task>.html`), fetched when the
/// cache does not hold it yet.
pub fn ensure() -> Result<PathBuf, FetchError> {
    let base = cache_dir().ok_or(FetchError::NoCacheDir)?;
    let home = base.join(VERSION);
    let html = home.join("html");
    if html.join("core/core.js").is_file() {
        return Ok(html);
    }
    std::fs::create_dir_all(&base).map_err(|e| FetchError::Io(base.clone(), e))?;
    let pid = std::process::id();
    let download = base.join(format!(".download-{pid}"));
    let staging = base.join(format!(".{VERSION}-{pid}"));
    let result = fetch_into(&download, &staging.join("html")).and_then(|()| {
        match std::fs::rename(&staging, &home) {
            Ok(()) => Ok(()),
            // Another eval unpacked it meanwhile: theirs is as good.
            Err(_) if html.join("core/core.js").is_file() => Ok(()),
            Err(e) => Err(FetchError::Io(home.clone(), e)),
        }
    });
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&staging);
    result.map(|()| html)
}

/// `$XDG_CACHE_HOME/agent-controller/miniwob`, or `~/.cache/…` without it.
pub fn cache_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let cache = nonempty("XDG_CACHE_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".cache")))?;
    Some(cache.join("agent-controller").join("miniwob"))
}

fn fetch_into(download: &Path, html: &Path) -> Result<(), FetchError> {
    std::fs::create_dir_all(download).map_err(|e| FetchError::Io(download.to_path_buf(), e))?;
    let requirement = download.join("requirement.txt");
    let pinned = format!("miniwob=={VERSION} --hash=sha256:{WHEEL_SHA256}\n");
    std::fs::write(&requirement, pinned).map_err(|e| FetchError::Io(requirement.clone(), e))?;
    pip_download(&requirement, download)?;
    let wheel = std::fs::read_dir(download)
        .map_err(|e| FetchError::Io(download.to_path_buf(), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| FetchError::BadWheel("pip left no .whl file".into()))?;
    unpack(&wheel, html)
}

/// `pip download` with the first pip that runs; its own words when it fails.
fn pip_download(requirement: &Path, dir: &Path) -> Result<(), FetchError> {
    let candidates: [&[&str]; 3] = [&["pip"], &["pip3"], &["python3", "-m", "pip"]];
    for argv in candidates {
        let output = Command::new(argv[0])
            .args(&argv[1..])
            .args(["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "--quiet"])
            .arg("-r")
            .arg(requirement)
            .arg("-d")
            .arg(dir)
            .stdin(Stdio::null())
            .output();
        let output = match output {
            Ok(o) => o,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(FetchError::Download(format!("{}: {e}", argv.join(" ")))),
        };
        if output.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        // `python3 -m pip` without the pip module: no pip, rather than a failed download.
        if said.contains("No module named pip") {
            continue;
        }
        let tail: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
        return Err(FetchError::Download(tail[tail.len().saturating_sub(3)..].join(" / ")));
    }
    Err(FetchError::NoPip)
}

/// The wheel's `miniwob/html/…` files into `html`; entries whose names would leave it are refused.
pub fn unpack(wheel: &Path, html: &Path) -> Result<(), FetchError> {
    let bad = |why: String| FetchError::BadWheel(format!("{}: {why}", wheel.display()));
    let file = std::fs::File::open(wheel).map_err(|e| FetchError::Io(wheel.to_path_buf(), e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?.into_owned();
        let Some(rel) = name.strip_prefix(HTML_PREFIX).map(PathBuf::from) else { continue };
        if entry.is_dir() || rel.as_os_str().is_empty() {
            continue;
        }
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(bad(format!("the entry {name:?} leaves its folder")));
        }
        let to = html.join(&rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| FetchError::Io(parent.to_path_buf(), e))?;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0).min(16 << 20));
        entry.by_ref().take(64 << 20).read_to_end(&mut bytes).map_err(|e| bad(e.to_string()))?;
        std::fs::write(&to, bytes).map_err(|e| FetchError::Io(to.clone(), e))?;
    }
    if html.join("core/core.js").is_file() { Ok(()) } else { Err(bad(format!("no {HTML_PREFIX}core/core.js"))) }
}

//! The eval site's MiniWoB++ routes: the package's files from the cache under its own folders
//! (a content type by extension; nothing outside the folder; of the task pages only the
//! development split's), each task page with our hook (`hook.js`, `/ac-miniwob/hook.js`) put
//! right after its `core.js` with the seed and episode id the runner armed for that task, and
//! `/ac-miniwob/event`, where the hook posts the page's query and its reward: the episode's
//! record, and the judge. The page's URL carries nothing of the harness: the model reads it on
//! every page, and a query of seed and episode cost about 20 tokens each time.

use super::DEV_TASKS;
use crate::eval::loopback::Answer;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

const HOOK: &str = include_str!("hook.js");
/// The package's top folders, served at the site's root so that a task page is
/// `/miniwob/<task>.html` (its scripts are `../core/…`): a URL the model reads on every page.
const PACKAGE_FOLDERS: [&str; 4] = ["common", "core", "flight", "miniwob"];
/// The most queries one episode keeps (a page reloaded over and over adds no more).
const MAX_QUERIES: usize = 8;

/// What the hook reported for one episode (one page URL).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Episode {
    /// The page's query each time an episode started on it, in order.
    pub queries: Vec<String>,
    /// The raw reward the page's code gave when the first episode ended.
    pub reward: Option<f64>,
    /// The reason the page gave with it, if any.
    pub reason: Option<String>,
}

/// The package's folder (when the suite runs) and what the hooks reported.
#[derive(Default)]
pub struct Pages {
    root: Option<PathBuf>,
    episodes: Mutex<HashMap<String, Episode>>,
    /// Per task, the seed and episode its page is served with next (the runner's one at a time).
    armed: Mutex<HashMap<String, (u32, String)>>,
}

impl Pages {
    pub fn new(root: Option<PathBuf>) -> Pages {
        Pages { root, episodes: Mutex::default(), armed: Mutex::default() }
    }

    /// Serve `task`'s page from now on with `seed` and `episode` (the runner's id: letters,
    /// digits and dashes).
    pub fn arm(&self, task: &str, seed: u32, episode: &str) {
        debug_assert!(valid_episode(episode), "{episode}");
        self.armed.lock().unwrap_or_else(|p| p.into_inner()).insert(task.to_string(), (seed, episode.to_string()));
    }

    /// What the hook reported for `episode` so far.
    pub fn episode(&self, episode: &str) -> Option<Episode> {
        self.episodes.lock().unwrap_or_else(|p| p.into_inner()).get(episode).cloned()
    }

    /// A GET of the package's files (under its folders: `/miniwob/<task>.html`, `/core/…`) or
    /// of `/ac-miniwob/hook.js`, or the hook's POST; None for other paths.
    pub(in crate::eval) fn route(&self, post: bool, path: &str, body: &str) -> Option<Answer> {
        if post {
            return (path == "/ac-miniwob/event").then(|| self.record(body));
        }
        if path == "/ac-miniwob/hook.js" {
            return Some(Answer::bytes("text/javascript; charset=utf-8", HOOK.as_bytes().to_vec()));
        }
        let rel = path.strip_prefix('/')?;
        let top = rel.split('/').next().unwrap_or_default();
        PACKAGE_FOLDERS.contains(&top).then(|| self.file(rel))
    }

    fn file(&self, rel: &str) -> Answer {
        let Some(root) = &self.root else { return not_found("the miniwob suite is not running") };
        let rel = percent_encoding::percent_decode_str(rel).decode_utf8_lossy();
        let Some(rel) = safe_relative(&rel) else { return not_found("no such file") };
        if task_page(&rel).is_some_and(|task| !DEV_TASKS.contains(&task.as_str())) {
            return not_found("held out: only the development split's tasks are served");
        }
        let bytes = match std::fs::read(root.join(&rel)) {
            Ok(b) => b,
            Err(_) => return not_found("no such file"),
        };
        let kind = content_type(&rel);
        let armed =
            task_page(&rel).and_then(|task| self.armed.lock().unwrap_or_else(|p| p.into_inner()).get(&task).cloned());
        match armed {
            Some((seed, episode)) => match inject(&String::from_utf8_lossy(&bytes), seed, &episode) {
                Some(html) => Answer::bytes(kind, html.into_bytes()),
                None => not_found("not a MiniWoB page: no core/core.js script"),
            },
            None => Answer::bytes(kind, bytes),
        }
    }

    /// The hook's post: `{"episode", "kind": "start", "query"}` or `{…, "kind": "end", "reward", "reason"}`.
    fn record(&self, body: &str) -> Answer {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(body) else {
            return Answer::text(400, "not JSON");
        };
        let Some(id) = event["episode"].as_str().filter(|e| valid_episode(e)) else {
            return Answer::text(400, "no episode");
        };
        let mut episodes = self.episodes.lock().unwrap_or_else(|p| p.into_inner());
        let episode = episodes.entry(id.to_string()).or_default();
        match event["kind"].as_str() {
            Some("start") if episode.queries.len() < MAX_QUERIES => {
                episode.queries.push(event["query"].as_str().unwrap_or_default().to_string());
            }
            Some("end") if episode.reward.is_none() => {
                episode.reward = event["reward"].as_f64();
                episode.reason = event["reason"].as_str().map(str::to_string);
            }
            Some("start" | "end") => {}
            _ => return Answer::text(400, "kind: start or end"),
        }
        Answer::text(200, "recorded")
    }
}

/// `rel` as a path of plain names only (no `..`, no root, no empty or hidden tricks).
fn safe_relative(rel: &str) -> Option<PathBuf> {
    if rel.is_empty() || rel.contains('\0') || rel.contains('\\') || rel.starts_with('/') {
        return None;
    }
    let path = PathBuf::from(rel);
    path.components().all(|c| matches!(c, Component::Normal(_))).then_some(path)
}

/// The task a path names when it is a task page: `miniwob/<task>.html`.
fn task_page(rel: &Path) -> Option<String> {
    let mut parts = rel.components();
    let (Some(Component::Normal(dir)), Some(Component::Normal(file)), None) =
        (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let file = file.to_str()?;
    (dir == "miniwob").then(|| file.strip_suffix(".html").map(str::to_string))?
}

/// Episode ids are the runner's: letters, digits and dashes.
fn valid_episode(e: &str) -> bool {
    !e.is_empty() && e.len() <= 100 && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The page with our hook right after its `core/core.js` script; None when it has none.
pub fn inject(html: &str, seed: u32, episode: &str) -> Option<String> {
    let core = html.find("core/core.js")?;
    let close = core + html[core..].find("</script>")? + "</script>".len();
    let tag =
        format!("\n<script src=\"/ac-miniwob/hook.js\" data-seed=\"{seed}\" data-episode=\"{episode}\"></script>");
    Some(format!("{}{tag}{}", &html[..close], &html[close..]))
}

fn content_type(rel: &Path) -> &'static str {
    match rel.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn not_found(why: &str) -> Answer {
    Answer::text(404, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_package_and_held_out_pages_are_not_served() {
        assert_eq!(safe_relative("core/core.js"), Some(PathBuf::from("core/core.js")));
        for bad in ["../etc/passwd", "core/../../x", "/etc/passwd", "a\\b", "", "./x", "a/\0"] {
            assert_eq!(safe_relative(bad), None, "{bad:?}");
        }
        assert_eq!(task_page(Path::new("miniwob/click-test.html")).as_deref(), Some("click-test"));
        assert_eq!(task_page(Path::new("core/core.js")), None);
        let dir = std::env::temp_dir().join(format!("ac-miniwob-serve-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("miniwob")).unwrap();
        std::fs::write(dir.join("miniwob/book-flight.html"), "<script src=\"../core/core.js\"></script>").unwrap();
        let pages = Pages::new(Some(dir.clone()));
        let held = pages.route(false, "/miniwob/book-flight.html", "").unwrap();
        assert_eq!(held.status, 404);
        assert_eq!(pages.route(false, "/miniwob/%2e%2e/x", "").unwrap().status, 404);
        assert!(pages.route(false, "/index.html", "").is_none());
        assert_eq!(pages.route(false, "/core/core.js", "").unwrap().status, 404, "no such file in this package");
        // A task page has the hook once its task is armed, and its URL needs no query for it.
        std::fs::write(dir.join("miniwob/click-test.html"), "<script src=\"../core/core.js\"></script>").unwrap();
        let page = |pages: &Pages| {
            String::from_utf8(pages.route(false, "/miniwob/click-test.html", "").unwrap().body).unwrap()
        };
        assert!(!page(&pages).contains("hook.js"), "not armed: the package's page as it is");
        pages.arm("click-test", 7, "click-test-1-0");
        assert!(page(&pages).contains("data-seed=\"7\" data-episode=\"click-test-1-0\""), "{}", page(&pages));
        pages.arm("click-test", 8, "click-test-2-1");
        assert!(page(&pages).contains("data-seed=\"8\" data-episode=\"click-test-2-1\""), "the next run's");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_hook_goes_right_after_core_js_and_events_are_recorded_once() {
        let page = "<head><script src=\"../core/core.js\"></script>\n<script>var x;</script></head>";
        let out = inject(page, 42, "click-test-1").unwrap();
        let hook = out.find("/ac-miniwob/hook.js").unwrap();
        assert!(out.find("core/core.js").unwrap() < hook && hook < out.find("var x").unwrap(), "{out}");
        assert!(out.contains("data-seed=\"42\" data-episode=\"click-test-1\""));
        assert_eq!(inject("<p>no core</p>", 1, "e"), None);

        let pages = Pages::new(None);
        let post = |b: &str| pages.route(true, "/ac-miniwob/event", b).unwrap().status;
        assert_eq!(post(r#"{"episode": "e-1", "kind": "start", "query": "Click the button."}"#), 200);
        assert_eq!(post(r#"{"episode": "e-1", "kind": "end", "reward": 0.5, "reason": null}"#), 200);
        assert_eq!(post(r#"{"episode": "e-1", "kind": "end", "reward": -1}"#), 200);
        assert_eq!(post(r#"{"episode": "../x", "kind": "end", "reward": 1}"#), 400);
        let e = pages.episode("e-1").unwrap();
        assert_eq!((e.queries, e.reward), (vec!["Click the button.".to_string()], Some(0.5)));
    }
}

//! The `miniwob` suite: MiniWoB++ tasks through the whole system, as the own suite's are. The
//! package is fetched at eval time (`fetch.rs`) and served by the eval's site with our hook
//! (`serve.rs`, `hook.js`), which seeds the page, lifts its time limit, starts its episode and
//! reports its query and reward. Per run: a headless Chromium of our own opens the page once
//! with the run's seed to read its query; the session (a browser task on the same page, same
//! seed) gets exactly that query as its instruction; the judge is the reward the page's own code
//! gave that session's episode (pass above 0), never the model's words. Only `DEV_TASKS` run.

pub mod fetch;
pub mod serve;

use super::{Options, Row, Stack, tasks::Kind};
use serve::Episode;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The development split: the only MiniWoB++ tasks the eval runs (and anyone tunes on). Every
/// other task of the package is held out; the site does not even serve its page.
pub const DEV_TASKS: &[&str] = &[
    "click-menu",
    "click-menu-2",
    "click-scroll-list",
    "click-test",
    "click-test-2",
    "click-widget",
    "choose-date-easy",
    "choose-date-nodelay",
    "copy-paste",
    "copy-paste-2",
    "enter-time",
    "find-word",
    "form-sequence",
    "form-sequence-2",
    "form-sequence-3",
    "guess-number",
    "multi-layouts",
    "multi-orderings",
    "phone-book",
    "read-table",
    "read-table-2",
    "scroll-text",
    "scroll-text-2",
    "simple-algebra",
    "simple-arithmetic",
    "terminal",
    "text-transform",
    "unicode-test",
    "use-spinner",
    "buy-ticket",
    "order-food",
    "sign-agreement",
    "odd-or-even",
    "find-greatest",
    "daily-calendar",
    "generate-number",
];

/// The Chromium that reads a page's query (the worker's default browser).
const CHROMIUM: &str = "/usr/bin/chromium";
/// The longest the query's page may take to load.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The page's seed for `task`'s run `run`: the same for the same pair, different across runs
/// and tasks (FNV-1a of `task#run`, kept below 2^31).
pub fn seed(task: &str, run: u32) -> u32 {
    let hash =
        format!("{task}#{run}").bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    hash & 0x7fff_ffff
}

/// One run of one task: the query read, the session on the page, the page's reward judged.
pub(super) fn run_task(stack: &Stack, task: &str, run: u32, opts: &Options) -> Row {
    let seed = seed(task, run);
    // Unique per session (a rerun of the same task and run gets the same seed, not its record).
    static SESSIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nth = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let episode = format!("{task}-{run}-{nth}");
    let mut row = Row::new(task, Kind::Browser.name(), run);
    row.seed = Some(seed);
    let probe = format!("{episode}-query");
    let instruction = match read_query(stack, &stack.site.arm_miniwob(task, seed, &probe), &probe) {
        Ok(q) => q,
        Err(why) => {
            row.why = why;
            return row;
        }
    };
    let started = Instant::now();
    let target = stack.site.arm_miniwob(task, seed, &episode);
    let id = match stack.create(Kind::Browser, &target, &instruction, None, opts) {
        Ok(id) => id,
        Err(e) => {
            row.why = e.to_string();
            return row;
        }
    };
    // The page's first reward is the judge's, so the session is stopped once it is given: what the
    // model does after it cannot change the outcome, only the eval's time.
    let rewarded = || stack.site.episode(&episode).is_some_and(|e| e.reward.is_some());
    let session = stack.wait_until_ended(&id, opts.session_timeout, &rewarded);
    row.seconds = started.elapsed().as_secs_f64();
    row.fill_from(&session, super::first_request_tokens(&stack.output.join(&id)));
    let record = stack.site.episode(&episode);
    row.reward = record.as_ref().and_then(|e| e.reward);
    match judge(record.as_ref(), &instruction) {
        Ok(()) => row.pass = true,
        Err(why) => row.why = why,
    }
    row.session = id;
    row
}

/// Pass when the page's own code gave the session's episode a reward above 0, on the query the
/// session was given; else why not.
pub fn judge(episode: Option<&Episode>, instruction: &str) -> Result<(), String> {
    let Some(episode) = episode else { return Err("no reward (the page never started an episode)".into()) };
    if let Some(asked) = episode.queries.first().filter(|q| *q != instruction) {
        return Err(format!("the page asked {asked:?}, not the instruction (the seed did not hold)"));
    }
    match episode.reward {
        None => Err("no reward".into()),
        Some(r) if r > 0.0 => Ok(()),
        Some(r) => match &episode.reason {
            Some(reason) => Err(format!("reward {r} ({reason})")),
            None => Err(format!("reward {r}")),
        },
    }
}

/// The page's query, as its hook posted it when a headless Chromium of our own opened `url`
/// (tried twice: a browser starting beside others on a busy machine may fail once).
fn read_query(stack: &Stack, url: &str, episode: &str) -> Result<String, String> {
    let mut why = String::new();
    for _ in 0..2 {
        let ran = open_headless(&stack.scratch, url);
        match query_of(stack.site.episode(episode).as_ref()) {
            Ok(q) => return Ok(q),
            Err(e) => why = format!("{e} ({})", ran.err().unwrap_or_else(|| "Chromium ran".into())),
        }
    }
    Err(why)
}

/// Open `url` in a headless Chromium that exits once the page has loaded; Err says how it ended.
fn open_headless(scratch: &Path, url: &str) -> Result<(), String> {
    let profile = scratch.join("query-browser");
    let log_path = scratch.join("query-browser.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut command = Command::new(CHROMIUM);
    command
        .args(["--headless=new", "--dump-dom", "--no-first-run", "--no-default-browser-check", "--disable-gpu"])
        .args(["--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage"])
        .arg(format!("--user-data-dir={}", profile.display()));
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Chromium will not start as root with its sandbox; the page is the package's, on loopback.
        command.arg("--no-sandbox");
    }
    let mut child = command
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {CHROMIUM} to read the page's query: {e}"))?;
    let deadline = Instant::now() + READ_TIMEOUT;
    let mut status = None;
    while status.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        status = child.try_wait().ok().flatten();
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&profile);
    let said = std::fs::read_to_string(&log_path).unwrap_or_default();
    let last = said.lines().rev().find(|l| l.contains("ERROR") && !l.contains("dbus")).unwrap_or("").trim();
    match status {
        Some(s) if s.success() && last.is_empty() => Ok(()),
        Some(s) => Err(format!("Chromium {s}: {last}")),
        None => Err(format!("Chromium still loading after {} s: {last}", READ_TIMEOUT.as_secs())),
    }
}

fn query_of(episode: Option<&Episode>) -> Result<String, String> {
    match episode.and_then(|e| e.queries.first()) {
        Some(q) if !q.is_empty() => Ok(q.clone()),
        Some(_) => Err("the page shows no query (#query is empty)".into()),
        None => Err("the page started no episode when it was opened to read its query".into()),
    }
}

/// The MiniWoB++ tasks, one line each (`eval --suite miniwob --list`).
pub fn task_list() -> String {
    DEV_TASKS.iter().map(|t| format!("{t:<19} browser\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_across_runs_and_tasks_and_repeat_exactly() {
        assert_eq!(seed("click-test", 1), seed("click-test", 1));
        assert_ne!(seed("click-test", 1), seed("click-test", 2));
        assert_ne!(seed("click-test", 1), seed("click-test-2", 1));
        assert!(seed("terminal", 7) < 1 << 31);
        assert_eq!(DEV_TASKS.len(), 36);
    }

    #[test]
    fn only_a_positive_reward_on_the_query_given_passes() {
        let ep = |q: &str, r: Option<f64>| Episode { queries: vec![q.into()], reward: r, reason: None };
        assert_eq!(judge(Some(&ep("Click.", Some(0.4))), "Click."), Ok(()));
        assert_eq!(judge(Some(&ep("Click.", Some(-1.0))), "Click.").unwrap_err(), "reward -1");
        assert_eq!(judge(Some(&ep("Click.", None)), "Click.").unwrap_err(), "no reward");
        assert!(judge(None, "Click.").unwrap_err().starts_with("no reward"));
        assert!(judge(Some(&ep("Other.", Some(1.0))), "Click.").unwrap_err().contains("not the instruction"));
        assert_eq!(query_of(Some(&ep("Click.", None))), Ok("Click.".into()));
        assert!(query_of(None).is_err());
    }
}

//! Issue 16's browser attacks against the real worker and Chromium, one worker for all of them:
//! a later session riding an earlier one's login or storage, a DevTools port any local process
//! could use, a page that tampers with what the worker's helpers use; and issue 15's hung (not
//! dead) browser, replaced within 10 s. Skipped with a message when Chromium is not installed.

use crate::support::site::Site;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use agent_controller::session::{AgentOutcome, SessionRunner};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

fn cmd(r: &SessionRunner, action: &str, params: Value) -> Value {
    r.execute(action, params.clone(), Duration::from_secs(60)).unwrap_or_else(|e| panic!("{action} {params}: {e}"))
}

fn text(r: &SessionRunner, selector: &str) -> Value {
    cmd(r, "browser_get_text", json!({"selector": selector}))["text"].clone()
}

/// The processes of the worker's Chromium: those whose command line names its profile, and
/// every process of their process group.
fn chromium_pids(worker_pid: u32) -> Vec<(u32, String, i32)> {
    let profile = format!("agent-worker-profile-{worker_pid}-");
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The fields after the command name, which is in parentheses: state, ppid, pgrp.
        let pgrp = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse().ok());
        if let Some(pgrp) = pgrp {
            all.push((pid, cmdline, pgrp));
        }
    }
    let groups: HashSet<i32> = all.iter().filter(|(_, c, _)| c.contains(&profile)).map(|p| p.2).collect();
    all.into_iter().filter(|p| groups.contains(&p.2)).collect()
}

/// Socket inodes listening on TCP (v4 and v6).
fn tcp_listeners() -> HashSet<String> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && cols[3] == "0A" {
                inodes.insert(cols[9].to_string());
            }
        }
    }
    inodes
}

/// No process of the browser listens on TCP; it speaks DevTools over its pipe only.
fn assert_no_devtools_port(worker_pid: u32) {
    let procs = chromium_pids(worker_pid);
    let main = procs.iter().find(|(pid, _, pgrp)| *pid as i32 == *pgrp).expect("the browser's main process");
    assert!(main.1.contains("--remote-debugging-pipe") && !main.1.contains("--remote-debugging-port"), "{}", main.1);
    let listening = tcp_listeners();
    for (pid, cmdline, _) in &procs {
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten() {
            let link = std::fs::read_link(fd.path()).map(|l| l.display().to_string()).unwrap_or_default();
            let inode = link.strip_prefix("socket:[").and_then(|l| l.strip_suffix(']')).unwrap_or("");
            assert!(!listening.contains(inode), "{pid} ({cmdline}) listens on TCP");
        }
    }
    // Sandbox: off only for root in a container, and then the log says why.
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !root {
        assert!(!main.1.contains("--no-sandbox"), "{}", main.1);
    }
}

#[test]
fn sessions_do_not_share_a_browser_and_a_hung_one_is_replaced() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("browser-isolation");
    let log_path = dir.path().join("worker.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(&dir.path().join("out")), agent);
    let worker = RealWorker::start_with_log(&d, "iso-box", "browser", log);
    let c = d.client();
    let body = json!({"mode": "task", "target": site.url, "instruction": "isolation"});
    let first = create_session(&c, body.clone());
    let (r, done) = test_agent.next();

    // Session 1 logs in, and stores something in localStorage.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/login", site.url)}));
    assert_no_devtools_port(worker.0.id());
    cmd(&r, "browser_type", json!({"selector": "input[name=user]", "text": "alice@example.test"}));
    cmd(&r, "browser_type", json!({"selector": "input[type=password]", "text": "s3cret-pw", "press_enter": true}));
    assert_eq!(text(&r, "h1"), "Welcome alice");
    cmd(&r, "browser_navigate", json!({"url": format!("{}/storage", site.url)}));
    cmd(&r, "browser_navigate", json!({"url": format!("{}/storage", site.url)}));
    assert_eq!(text(&r, "#seen"), "seen before", "storage works within a session");

    // A page that fakes window.__ac and replaces the builtins the helpers use neither breaks
    // them nor sees them at work.
    let nav = cmd(&r, "browser_navigate", json!({"url": format!("{}/hostile", site.url)}));
    assert_eq!(nav["title"], "Hostile", "{nav}");
    assert!(nav["snapshot"].as_str().unwrap_or("").contains("button \"Go\""), "{nav}");
    let table = cmd(&r, "browser_scrape_table", json!({"selector": "#t"}));
    assert_eq!(table["csv"], "Name,Score\nAda,9\n", "{table}");
    cmd(&r, "browser_fill_form", json!({"fields": [{"selector": "input[name=q]", "value": "topsecret"}]}));
    cmd(&r, "browser_click", json!({"selector": "#go"}));
    assert_eq!(text(&r, "#out"), "went");
    let links = cmd(&r, "browser_scrape_links", json!({}));
    assert_eq!(links["count"], 0, "{links}");
    assert_eq!(text(&r, "#spied"), "", "the page saw the helpers at work");
    done.send(AgentOutcome::Finished { summary: "logged in".into() }).unwrap();
    wait_status(&c, &first, "finished");

    // Session 2, on the same worker and browser, has none of it.
    let _second = create_session(&c, body);
    let (r, _done) = test_agent.next();
    cmd(&r, "browser_navigate", json!({"url": format!("{}/account", site.url)}));
    assert_eq!(text(&r, "p"), "not logged in", "session 2 rode session 1's login");
    cmd(&r, "browser_navigate", json!({"url": format!("{}/storage", site.url)}));
    assert_eq!(text(&r, "#seen"), "first visit", "session 2 saw session 1's localStorage");
    let e = r.execute(
        "browser_download",
        json!({"url": format!("{}/private/report.pdf", site.url)}),
        Duration::from_secs(60),
    );
    assert!(e.as_ref().is_err_and(|e| e.to_string().contains("HTTP 403")), "{e:?}");
    let tabs = cmd(&r, "browser_get_page_info", json!({}))["tabs"].clone();
    assert_eq!(tabs.as_array().map(Vec::len), Some(1), "only this session's tab: {tabs}");
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let switches: Vec<&str> = logged.lines().filter(|l| l.contains("a fresh browser context")).collect();
    assert_eq!(switches.len(), 2, "{logged}");
    eprintln!("session switch: {}", switches[1].rsplit_once(" in ").map_or("?", |(_, ms)| ms));
    if chromium_pids(worker.0.id()).iter().any(|p| p.1.contains("--no-sandbox")) {
        assert!(logged.contains("root in a container") && logged.contains("--no-sandbox"), "{logged}");
    }

    // A browser that hangs without dying (every process stopped) is killed and replaced; the
    // command that finds it so says the pages are gone.
    let hung = chromium_pids(worker.0.id());
    let pgrp = hung.iter().find(|p| p.0 as i32 == p.2).map(|p| p.2).expect("the browser's main process");
    assert!(Command::new("kill").args(["-STOP", "--", &format!("-{pgrp}")]).status().unwrap().success());
    let t = Instant::now();
    let url = json!({"url": format!("{}/storage", site.url)});
    let after = match r.execute("browser_navigate", url.clone(), Duration::from_secs(60)) {
        Ok(v) => v,
        // Found hung mid-command: that command says so, the next runs on a new browser.
        Err(e) => {
            assert!(e.to_string().contains("restarted on the next command"), "{e}");
            cmd(&r, "browser_navigate", url)
        }
    };
    let back = t.elapsed();
    eprintln!("browser working again {back:?} after it hung");
    assert!(after.to_string().contains("restarted"), "the result says so: {after}");
    assert_eq!(after["title"], "Storage");
    assert!(back < Duration::from_secs(10), "{back:?}");
    wait_until(Duration::from_secs(5), "the hung browser to be gone", || {
        // Gone, or a zombie waiting for whoever adopted it.
        let stat = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let gone = |pid: u32| stat(pid).rsplit_once(')').is_none_or(|(_, rest)| rest.trim_start().starts_with('Z'));
        hung.iter().all(|p| gone(p.0)).then_some(())
    });
}

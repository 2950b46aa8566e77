//! The real agent-worker with real headless Chromium, through the real controller, against a
//! site served on loopback. Skipped with a message when Chromium is not installed.

use crate::support::llm::*;
use crate::support::site::{Site, pdf_bytes};
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use agent_controller::session::SessionRunner;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn cmd(r: &SessionRunner, action: &str, params: Value) -> Value {
    r.execute(action, params.clone(), Duration::from_secs(60)).unwrap_or_else(|e| panic!("{action} {params}: {e}"))
}

fn cmd_err(r: &SessionRunner, action: &str, params: Value) -> String {
    match r.execute(action, params.clone(), Duration::from_secs(60)) {
        Ok(v) => panic!("{action} {params} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

fn timed(samples: &mut Vec<Duration>, f: impl FnOnce() -> Value) -> Value {
    let t = Instant::now();
    let v = f();
    samples.push(t.elapsed());
    v
}

#[test]
fn every_browser_tool_through_controller_and_worker() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("browser-e2e");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let worker = RealWorker::start(&d, "chrome-box", "browser,shell");
    let id = create_session(&d.client(), json!({"mode": "task", "target": site.url, "instruction": "test every tool"}));
    let (r, _done) = test_agent.next();
    let (mut nav_t, mut shot_t, mut click_t) = (Vec::new(), Vec::new(), Vec::new());

    // Observe.
    let info = timed(&mut nav_t, || cmd(&r, "browser_navigate", json!({"url": format!("{}/", site.url)})));
    assert_eq!(info["title"], "Library");
    let dom = cmd(&r, "browser_get_dom", json!({}));
    let outline = dom["outline"].as_str().unwrap();
    assert!(
        outline.contains("Lecture library") && outline.contains("Chapter 1") && outline.contains("table 3×2"),
        "{outline}"
    );
    assert!(outline.contains("[#prices]") && outline.contains("[#hello]"), "selectors that work: {outline}");
    assert!(cmd(&r, "browser_get_text", json!({"selector": "h1"}))["text"] == "Lecture library");
    let part = cmd(&r, "browser_get_dom", json!({"selector": "table#prices"}));
    assert!(part["outline"].as_str().unwrap().contains("table 3×2: Plan | Price"), "{part}");
    let shot = timed(&mut shot_t, || cmd(&r, "browser_screenshot", json!({})));
    assert_eq!(shot["media_type"], "image/png");
    assert_eq!(shot["width"], 1280);
    let png =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, shot["image_base64"].as_str().unwrap())
            .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let full = cmd(&r, "browser_screenshot", json!({"full_page": true}));
    assert!(full["height"].as_u64().unwrap() > 3000, "{}", full["height"]);

    // Act: clicks by CSS, text= and :has-text.
    timed(&mut click_t, || cmd(&r, "browser_click", json!({"selector": "#hello"})));
    assert_eq!(cmd(&r, "browser_get_text", json!({"selector": "#out"}))["text"], "clicked!");
    cmd(&r, "browser_click", json!({"selector": "text=Say hello"}));
    cmd(&r, "browser_click", json!({"selector": "button:has-text(\"hello\")"}));
    let e = cmd_err(&r, "browser_click", json!({"selector": "#buy"}));
    assert!(e.contains("no element matches `#buy`") && e.contains("#prices"), "names the page's ids: {e}");
    // Reading tools answer a selector that matches nothing with the whole page where the
    // controller asks (`read_miss_page`); else they fail as an action does.
    let e = cmd(&r, "browser_scrape_table", json!({"selector": "prices", "read_miss_page": true}));
    assert!(e["message"].as_str().unwrap().contains("did you mean `#prices`?"), "{e}");
    let e = cmd_err(&r, "browser_scrape_table", json!({"selector": "prices"}));
    assert!(e.contains("did you mean `#prices`?") && e.contains("link \"Chapter 1\""), "{e}");
    let e = cmd(&r, "browser_scrape_links", json!({"selector": "#nothing-here", "read_miss_page": true}));
    assert_eq!(e["found"], false, "an empty match is not an empty list: {e}");
    assert!(e["snapshot"].as_str().unwrap().contains("link \"Chapter 1\""), "{e}");
    let scrolled = cmd(&r, "browser_scroll", json!({"direction": "down", "amount": 500}));
    assert_eq!(scrolled["scroll"]["y"], 500);
    cmd(&r, "browser_scroll", json!({"selector": "#bottom"}));
    cmd(&r, "browser_hover", json!({"selector": "#hello"}));
    let info = cmd(&r, "browser_get_page_info", json!({}));
    assert_eq!(info["tabs"].as_array().unwrap().len(), 1);
    assert_eq!(cmd(&r, "browser_switch_tab", json!({"index": 0}))["title"], "Library");

    // Scrape.
    let links = cmd(&r, "browser_scrape_links", json!({"selector": "#toc", "pattern": "\\.pdf$"}));
    assert_eq!(links["count"], 2, "{links}");
    assert_eq!(links["links"][0]["url"], format!("{}/files/chapter1.pdf", site.url));
    let table = cmd(&r, "browser_scrape_table", json!({"selector": "#prices"}));
    assert_eq!(table["csv"], "Plan,Price\nBasic,10\n\"Pro, yearly\",99\n");
    let table = cmd(&r, "browser_scrape_table", json!({"selector": "#prices", "format": "json"}));
    assert_eq!(table["data"][1], json!({"Plan": "Pro, yearly", "Price": "99"}));
    // With a filename the table becomes the session's file, not a result to copy.
    let saved = cmd(&r, "browser_scrape_table", json!({"selector": "#prices", "filename": "prices"}));
    assert_eq!((saved["rows"].as_u64(), saved["columns"].as_u64()), (Some(3), Some(2)), "{saved}");
    assert!(saved.get("csv").is_none(), "{saved}");
    assert_eq!(
        d.client().get(&format!("/sessions/{id}/files/prices.csv")).body,
        b"Plan,Price\nBasic,10\n\"Pro, yearly\",99\n"
    );
    let texts = cmd(
        &r,
        "browser_scrape_text",
        json!({"selectors": [{"name": "title", "selector": "h1"}, {"name": "items", "selector": "#toc li"}]}),
    );
    assert_eq!(texts["title"], "Lecture library");
    assert_eq!(texts["items"].as_array().unwrap().len(), 3);

    // Downloads, uploaded into the session, byte for byte.
    let batch = cmd(
        &r,
        "browser_download_batch",
        json!({"urls": [
        {"url": format!("{}/files/chapter1.pdf", site.url)},
        {"url": format!("{}/files/chapter2.pdf", site.url), "filename": "second.pdf"},
        {"url": format!("{}/files/missing", site.url).replace("/files/", "/nope/")}]}),
    );
    assert_eq!(batch["downloaded"].as_array().unwrap().len(), 2, "{batch}");
    assert!(batch["failed"][0]["error"].as_str().unwrap().contains("HTTP 404"), "{batch}");
    let c = d.client();
    assert_eq!(c.get(&format!("/sessions/{id}/files/chapter1.pdf")).body, pdf_bytes("chapter1.pdf"));
    assert_eq!(c.get(&format!("/sessions/{id}/files/second.pdf")).body, pdf_bytes("chapter2.pdf"));

    // Forms.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/form", site.url)}));
    let filled = cmd(
        &r,
        "browser_fill_form",
        json!({"fields": [
        {"selector": "input[name=name]", "value": "Zoe"},
        {"selector": "select[name=color]", "value": "Green", "type": "select"},
        {"selector": "input[name=gift]", "value": "true", "type": "checkbox"}]}),
    );
    assert_eq!(filled["filled"].as_array().unwrap().len(), 3);
    cmd(&r, "browser_select_option", json!({"selector": "select[name=color]", "value": "g"}));
    let e = cmd_err(&r, "browser_select_option", json!({"selector": "select[name=color]", "value": "Blue"}));
    assert!(e.contains("no option `Blue`") && e.contains("Red"), "{e}");
    let done = cmd(&r, "browser_submit_form", json!({"selector": "#order"}));
    assert_eq!(done["title"], "Thanks");
    assert_eq!(cmd(&r, "browser_get_text", json!({"selector": "#summary"}))["text"], "name=Zoe color=g gift=yes");
    assert_eq!(cmd(&r, "browser_back", json!({}))["title"], "Order");
    assert_eq!(cmd(&r, "browser_forward", json!({}))["title"], "Thanks");

    // Typing, keys, login, a file behind the login cookie.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/login", site.url)}));
    let typed = cmd(&r, "browser_type", json!({"selector": "input[name=user]", "text": "alice@example.test"}));
    assert_eq!(typed["typed"], 18);
    let typed = cmd(&r, "browser_type", json!({"selector": "input[type=password]", "text": "s3cret-pw"}));
    assert!(!typed.to_string().contains("s3cret-pw"), "typed text is never echoed");
    let read_back = cmd(&r, "browser_get_text", json!({"selector": "input[type=password]"}));
    assert!(!read_back.to_string().contains("s3cret-pw"), "a password field reads as empty: {read_back}");
    cmd(&r, "browser_press_key", json!({"key": "Enter"}));
    assert_eq!(cmd(&r, "browser_get_text", json!({"selector": "h1"}))["text"], "Welcome alice");
    let private = cmd(&r, "browser_download", json!({"url": format!("{}/private/report.pdf", site.url)}));
    assert_eq!(private["filename"], "report.pdf");
    assert_eq!(c.get(&format!("/sessions/{id}/files/report.pdf")).body, pdf_bytes("private-report"));

    // The worker keeps to the command's deadline: a slow download is cut off, the rest of the
    // batch is not started, and the answer arrives before the controller gives up.
    let t = Instant::now();
    let partial = r
        .execute(
            "browser_download_batch",
            json!({"urls": [{"url": format!("{}/slow.pdf", site.url)}, {"url": format!("{}/files/chapter1.pdf", site.url), "filename": "late.pdf"}]}),
            Duration::from_secs(8),
        )
        .unwrap_err()
        .to_string();
    assert!(t.elapsed() < Duration::from_secs(8), "answered within the deadline: {:?}", t.elapsed());
    assert!(partial.contains("not started") && partial.contains("slow.pdf"), "{partial}");

    // Behind a redirect the cookie still goes along.
    let again =
        cmd(&r, "browser_download", json!({"url": format!("{}/go-private", site.url), "filename": "via-redirect.pdf"}));
    // The same bytes were downloaded before as report.pdf: named, not stored twice.
    assert_eq!(again["filename"], "report.pdf", "{again}");
    assert_eq!(c.get(&format!("/sessions/{id}/files/report.pdf")).body, pdf_bytes("private-report"));
    assert_eq!(c.get(&format!("/sessions/{id}/files/via-redirect.pdf")).status, 404);

    // A JavaScript alert is accepted and reported; the page goes on working.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/dialog", site.url)}));
    let clicked = cmd(&r, "browser_click", json!({"selector": "#save"}));
    assert!(clicked["dialogs"].as_str().unwrap_or("").contains("Saved!"), "{clicked}");
    assert_eq!(cmd(&r, "browser_get_text", json!({"selector": "#done"}))["text"], "after alert");
    // Text is never typed into a field that cannot take it (it would land elsewhere).
    cmd(&r, "browser_click", json!({"selector": "#visible"}));
    let e = cmd_err(&r, "browser_type", json!({"selector": "#secret", "text": "hunter2"}));
    assert!(e.contains("not visible"), "{e}");
    let e = cmd_err(&r, "browser_navigate", json!({"url": "file:///etc/passwd"}));
    assert!(e.contains("not an absolute http(s) URL"), "{e}");
    // confirm() is dismissed unless the model said otherwise first; its answer is for one dialog.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/confirm", site.url)}));
    let result = |sel: &str| {
        let clicked = cmd(&r, "browser_click", json!({"selector": sel}));
        (
            clicked["dialogs"].as_str().unwrap_or("").to_string(),
            cmd(&r, "browser_get_text", json!({"selector": "#r"}))["text"].clone(),
        )
    };
    let (said, text) = result("#del");
    assert!(said.contains(r#"confirm "Delete everything?" (dismissed)"#), "{said}");
    assert_eq!(text, "kept");
    cmd(&r, "browser_answer_dialog", json!({"accept": true}));
    let (said, text) = result("#del");
    assert!(said.contains("(accepted)"), "{said}");
    assert_eq!(text, "deleted");
    cmd(&r, "browser_answer_dialog", json!({"accept": true, "text": "Ada"}));
    assert_eq!(result("#ask").1, "name:Ada");
    assert_eq!(result("#del").1, "kept", "the answer was for one dialog only");

    // Waiting for late content, and a wait that gives up with a clear message.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/delayed", site.url)}));
    let waited = cmd(&r, "browser_wait_for", json!({"selector": "#late", "timeout_s": 10}));
    assert!(waited["after_ms"].as_u64().unwrap() > 0, "it waited: {waited}");
    cmd(&r, "browser_wait_for", json!({"text": "Ready now"}));
    let e = cmd_err(&r, "browser_wait_for", json!({"selector": "#never", "timeout_s": 1}));
    assert!(e.contains("waited 1 s") && e.contains("#never"), "{e}");

    // Save as PDF: a real PDF with pages.
    cmd(&r, "browser_navigate", json!({"url": format!("{}/", site.url)}));
    let pdf = cmd(&r, "browser_save_as_pdf", json!({"filename": "library", "wait_for_selector": "#prices"}));
    assert_eq!(pdf["filename"], "library.pdf");
    let bytes = c.get(&format!("/sessions/{id}/files/library.pdf")).body;
    assert!(bytes.starts_with(b"%PDF"), "not a PDF");
    assert_pdf_has_pages(&bytes);

    // Errors a model can act on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = cmd_err(&r, "browser_navigate", json!({"url": format!("http://127.0.0.1:{closed}/")}));
    assert!(e.contains("failed") && e.contains("ERR_CONNECTION_REFUSED"), "{e}");
    let e = cmd_err(&r, "browser_navigate", json!({"url": "example.com"}));
    assert!(e.contains("not an absolute"), "{e}");

    // If Chromium dies, the next command starts a new one and says so.
    let pid = worker.0.id();
    let _ = Command::new("pkill").args(["-KILL", "-f", &format!("agent-worker-profile-{pid}-")]).status();
    let killed_at = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let after = match r.execute("browser_navigate", json!({"url": format!("{}/", site.url)}), Duration::from_secs(60)) {
        Ok(v) => {
            assert!(v["note"].as_str().unwrap_or("").contains("restarted"), "the result says so: {v}");
            v
        }
        // If the death is noticed mid-command, that command fails saying so and the next one
        // runs on a new browser.
        Err(e) => {
            assert!(e.to_string().contains("restarted on the next command"), "{e}");
            cmd(&r, "browser_navigate", json!({"url": format!("{}/", site.url)}))
        }
    };
    assert_eq!(after["title"], "Library");
    // Issue 15's bar: working again within 10 s of the crash, the page loaded included.
    let back = killed_at.elapsed();
    eprintln!("browser working again {back:?} after it was killed");
    assert!(back < Duration::from_secs(10), "{back:?}");

    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let rss = std::fs::read_to_string(format!("/proc/{}/status", worker.0.id())).unwrap_or_default();
    let rss = rss.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("VmRSS: ?").to_string();
    eprintln!(
        "worker timings (debug build): navigate {:?}, screenshot {:?}, click {:?}; worker {rss}",
        median(&mut nav_t),
        median(&mut shot_t),
        median(&mut click_t)
    );
}

fn assert_pdf_has_pages(bytes: &[u8]) {
    let dir = TempDir::new("pdfinfo");
    let path = dir.path().join("check.pdf");
    std::fs::write(&path, bytes).unwrap();
    match Command::new("pdfinfo").arg(&path).output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let pages: u32 =
                text.lines().find_map(|l| l.strip_prefix("Pages:")).map(|p| p.trim().parse().unwrap()).unwrap_or(0);
            assert!(pages >= 1, "pdfinfo: {text}");
        }
        Err(_) => eprintln!("pdfinfo not installed; checked only the %PDF header"),
    }
}

#[test]
fn shell_tools_including_killing_a_process_tree() {
    let dir = TempDir::new("shell-e2e");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _worker = RealWorker::start(&d, "shell-box", "shell");
    let _id = create_session(
        &d.client(),
        json!({"mode": "task", "type": "shell", "target": "shell-box", "instruction": "x"}),
    );
    let (r, _done) = test_agent.next();
    let work = TempDir::new("shell-files");
    let w = work.path().display().to_string();

    let out = cmd(
        &r,
        "run_command",
        json!({"command": "echo hello; echo oops >&2; printf '\\033[31mred\\033[0m\\n'; exit 3"}),
    );
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stdout"], "hello\nred\n", "ANSI codes stripped");
    assert_eq!(out["stderr"], "oops\n");
    let out = cmd(&r, "run_command", json!({"command": "pwd; echo $PAGER", "cwd": w}));
    assert_eq!(out["stdout"], format!("{w}\ncat\n"));

    // A tree: a background child and a foreground sleep; the timeout kills both.
    let t = Instant::now();
    let out = cmd(
        &r,
        "run_command",
        json!({"command": format!("sleep 300 & echo $! > {w}/bg.pid; sleep 300"), "timeout_s": 1}),
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(out["timed_out"], true);
    let pid = std::fs::read_to_string(work.path().join("bg.pid")).unwrap().trim().to_string();
    // SIGKILL has been sent; give a loaded scheduler a moment to act on it.
    wait_until(Duration::from_secs(5), &format!("background child {pid} to die"), || {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        (state.is_empty() || state.split_whitespace().nth(2) == Some("Z")).then_some(())
    });

    // The worker answers with the file and the command's output only: the hints a small model
    // gets beside them are the controller's (the `reading_hints` unit), the same over SSH.
    cmd(&r, "write_file", json!({"path": format!("{w}/s.csv"), "content": "item,amount\na,2\nb,3\n"}));
    let read = cmd(&r, "read_file", json!({"path": format!("{w}/s.csv")}));
    assert_eq!((read["content"].as_str(), read.get("hint")), (Some("item,amount\na,2\nb,3\n"), None), "{read}");
    let summed =
        cmd(&r, "run_command", json!({"command": format!("awk -F, 'NR>1 {{s += $2}} END {{print s}}' {w}/s.csv")}));
    assert_eq!((summed["stdout"].as_str(), summed.get("hint")), (Some("5\n"), None), "{summed}");
    // Big output is capped.
    let out = cmd(&r, "run_command", json!({"command": "yes x | head -c 200000"}));
    assert!(out["stdout"].as_str().unwrap().len() <= 64 * 1024);
    assert!(out["truncated"].as_str().unwrap().contains("200000"));

    cmd(&r, "write_file", json!({"path": format!("{w}/a.txt"), "content": "line one\nline two\n"}));
    let read = cmd(&r, "read_file", json!({"path": format!("{w}/a.txt")}));
    assert_eq!(read["content"], "line one\nline two\n");
    let read = cmd(&r, "read_file", json!({"path": format!("{w}/a.txt"), "max_bytes": 4}));
    assert_eq!(read["content"], "line");
    assert_eq!(read["truncated"], true);
    let list = cmd(&r, "list_dir", json!({"path": w}));
    let names: Vec<&str> = list["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["a.txt", "bg.pid", "s.csv"]);
    let e = cmd_err(&r, "read_file", json!({"path": format!("{w}/missing")}));
    assert!(e.contains("cannot open") && !e.contains("of that name"), "{e}");
    let e = cmd_err(&r, "read_file", json!({"path": format!("{w}/missing"), "same_name": true}));
    assert!(
        e.contains("cannot open")
            && e.contains(&format!("no file of that name under {w} either; to create it, call write_file")),
        "{e}"
    );
    // A guessed path to the one file of that name further down: read as asked unless the
    // controller's `same_name_read` asks for the search; then that file is read, and said so.
    cmd(&r, "run_command", json!({"command": format!("mkdir -p {w}/deep/er && echo hi > {w}/deep/er/notes.txt")}));
    let e = cmd_err(&r, "read_file", json!({"path": format!("{w}/notes.txt")}));
    assert!(e.contains("cannot open"), "{e}");
    let read = cmd(&r, "read_file", json!({"path": format!("{w}/notes.txt"), "same_name": true}));
    assert_eq!(
        (read["content"].as_str(), read["path"].as_str()),
        (Some("hi\n"), Some(&*format!("{w}/deep/er/notes.txt")))
    );
    assert!(read["note"].as_str().unwrap().contains("the only file of that name"), "{read}");
    // Two of that name: the error names both, and reads neither.
    cmd(&r, "run_command", json!({"command": format!("mkdir -p {w}/other && echo ho > {w}/other/notes.txt")}));
    let e = cmd_err(&r, "read_file", json!({"path": format!("{w}/notes.txt"), "same_name": true}));
    assert!(e.contains("a file of that name is at: ") && e.contains(&format!("`{w}/other/notes.txt`")), "{e}");
    // A browser command to a shell-only worker is an error, not a crash.
    let e = cmd_err(&r, "browser_navigate", json!({"url": "http://x.test"}));
    assert!(e.contains("without the browser capability"), "{e}");
}

#[test]
fn a_full_task_session_with_the_scripted_model() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("task-e2e");
    let script = vec![
        tool("perform_login", json!({})),
        tool("browser_navigate", json!({"url": format!("{}/", site.url)})),
        tool("browser_scrape_links", json!({"selector": "#toc", "pattern": "\\.pdf$"})),
        tool("request_confirmation", json!({"action": "batch_download", "description": "Download 3 PDFs"})),
        tool(
            "browser_download_batch",
            json!({"urls": [
            {"url": format!("{}/files/chapter1.pdf", site.url)},
            {"url": format!("{}/files/chapter2.pdf", site.url)},
            {"url": format!("{}/private/report.pdf", site.url)}]}),
        ),
        tool("browser_scrape_table", json!({"selector": "#prices"})),
        tool("save_file", json!({"filename": "prices.csv", "content": "Plan,Price\nBasic,10\n\"Pro, yearly\",99\n"})),
        tool("browser_save_as_pdf", json!({"filename": "library.pdf"})),
        tool("finish_task", json!({"summary": "3 PDFs, the price table and a PDF of the page"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.task.confirmation_timeout = 30);
    let _worker = RealWorker::start(&d, "task-box", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{}/", site.url), "instruction": "Get the PDFs and the prices",
        "credentials": {"username": "alice@example.test", "password": "s3cret-pw", "login_url": format!("{}/login", site.url)}}),
    );
    let p = wait_until(Duration::from_secs(60), "the confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    });
    c.post(
        &format!("/sessions/{id}/confirmation"),
        &json!({"confirmation_id": p["confirmation_id"], "approved": true}),
    );
    let s = wait_until(Duration::from_secs(90), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    });
    assert_eq!(s["status"], "finished", "{s}");
    llm.assert_well_formed();
    // The login worked: the private report (behind the cookie) came down too.
    assert_eq!(c.get(&format!("/sessions/{id}/files/chapter1.pdf")).body, pdf_bytes("chapter1.pdf"));
    assert_eq!(c.get(&format!("/sessions/{id}/files/chapter2.pdf")).body, pdf_bytes("chapter2.pdf"));
    assert_eq!(c.get(&format!("/sessions/{id}/files/report.pdf")).body, pdf_bytes("private-report"));
    assert!(c.get(&format!("/sessions/{id}/files/prices.csv")).text().contains("\"Pro, yearly\",99"));
    let pdf = c.get(&format!("/sessions/{id}/files/library.pdf")).body;
    assert!(pdf.starts_with(b"%PDF"));
    assert_pdf_has_pages(&pdf);
    // The model read the page after the login as text (no image), and the scraped table,
    // never the password.
    let reqs = llm.requests();
    assert_eq!(reqs[1].image_count(), 0);
    let login = reqs[1].last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(login.contains("heading 1 \"Welcome alice\""), "{login}");
    assert!(reqs[6].body.to_string().contains("Pro, yearly"));
    for req in &reqs {
        assert!(!req.body.to_string().contains("s3cret-pw"));
    }
    for (path, bytes) in all_files(dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains("s3cret-pw"), "{path:?}");
    }
}

fn worker_cmd(controller: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-worker"));
    c.args(["--controller", controller, "--capabilities", "shell", "--hostname", "proto-box"]).args(extra);
    c
}

#[test]
fn worker_retries_quietly_until_the_controller_appears_and_uses_its_token() {
    // A port with nothing on it yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = TempDir::new("worker-log");
    let log_path = log.path().join("worker.log");
    let mut child = ChildGuard(
        worker_cmd(&format!("http://127.0.0.1:{port}"), &["--token", "wtok-123"])
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(3500));
    let dir = TempDir::new("late-controller");
    let mut config = test_config(dir.path());
    config.server.worker_port = port;
    config.server.worker_token = agent_controller::util::secret::Secret::new("wtok-123");
    let d = TestDaemon::idle(config);
    let c = d.client();
    wait_until(Duration::from_secs(45), "the worker to come in", || {
        c.get("/workers").json().as_array().unwrap().iter().any(|w| w["hostname"] == "proto-box").then_some(())
    });
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(text.matches("cannot reach the controller").count(), 1, "the outage is logged once: {text}");
    wait_until(Duration::from_secs(5), "the recovery line", || {
        std::fs::read_to_string(&log_path).unwrap().contains("reachable again").then_some(())
    });
    // SIGTERM: a clean exit.
    let _ = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status();
    assert!(child.0.wait().unwrap().success());
}

#[test]
fn worker_exits_cleanly_on_shutdown_and_refuses_a_bad_token() {
    // A controller stand-in: registers the worker, then tells it to shut down.
    let server = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let url = format!("http://{}", server.server_addr().to_ip().unwrap());
    let srv = std::sync::Arc::clone(&server);
    let fake = std::thread::spawn(move || {
        while let Ok(rq) = srv.recv() {
            let authed =
                rq.headers().iter().any(|h| h.field.equiv("Authorization") && h.value.as_str() == "Bearer good");
            let body = match (authed, rq.url().split('?').next().unwrap()) {
                (false, _) => (401, json!({"error": "missing or invalid bearer token", "code": "unauthorized"})),
                (true, "/register") => (
                    200,
                    json!({"success": true, "message": "registered", "worker_id": "wkr_0001",
                    "config": {"browser": {"headless": true, "viewport_width": 800, "viewport_height": 600}, "click_delay": 1.0, "screenshot_delay": 0.5}}),
                ),
                (true, _) => (200, json!({"action": "shutdown"})),
            };
            let _ = rq.respond(tiny_http::Response::from_string(body.1.to_string()).with_status_code(body.0));
        }
    });
    let t = Instant::now();
    let status = worker_cmd(&url, &["--token", "good"]).stderr(Stdio::null()).status().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(t.elapsed() < Duration::from_secs(5));
    let out = worker_cmd(&url, &["--token", "bad"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused the worker token"));
    let out = worker_cmd("not-a-url", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    server.unblock();
    let _ = fake.join();
}

#[test]
fn a_browser_that_does_not_start_is_not_offered() {
    let d = TestDaemon::start(test_config(TempDir::new("no-browser").path()), TestAgent::new().1);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agent-worker"))
        .args(["--controller", &d.worker, "--hostname", "nob", "--capabilities", "browser,shell"])
        .args(["--browser", "/nonexistent/chromium"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let c = d.client();
    let w = wait_until(Duration::from_secs(10), "the worker to register", || {
        c.get("/workers").json().as_array().unwrap().iter().find(|w| w["hostname"] == "nob").cloned()
    });
    assert_eq!(w["capabilities"], json!(["shell"]), "{w}");
    let _ = child.kill();
    let mut log = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut log).unwrap();
    let _ = child.wait();
    assert!(log.contains("browser not offered") && log.contains("/nonexistent/chromium"), "{log}");
}

/// Every browser and shell tool of the table has a handler in the worker: none is answered with
/// the backends' catch-all "cannot do" (a tool added to the table without one would be).
#[test]
fn every_browser_and_shell_tool_of_the_table_has_a_handler() {
    use agent_controller::protocol::SessionType;
    use agent_controller::protocol::tools::{Runs, Tool};
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("handlers");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _worker = RealWorker::start(&d, "handler-box", "browser,shell");
    create_session(&d.client(), json!({"mode": "task", "target": site.url, "instruction": "x"}));
    let (r, _done) = test_agent.next();
    let targets = [Runs::Target(SessionType::Browser), Runs::Target(SessionType::Shell)];
    let tools: Vec<&Tool> = Tool::ALL.iter().filter(|t| targets.contains(&t.spec().runs)).collect();
    assert!(tools.len() > 25, "{}", tools.len());
    // Arguments that do nothing harmful: each tool runs, or says what is wrong with them.
    let params = json!({"timeout_s": 1, "command": "true", "path": dir.path().join("none"), "ms": 1});
    for tool in tools {
        if let Err(e) = r.execute(tool.name(), params.clone(), Duration::from_secs(60)) {
            assert!(!e.to_string().contains("cannot do"), "{}: {e}", tool.name());
        }
    }
}

//! The web page in a real headless Chromium, against the real daemon (scripted model, scripted
//! worker): the token prompt, creating a session, the log growing, approving a confirmation
//! with a click, the end, the report rendered safely, a download; no request leaves the
//! daemon, no console error, and the page fits a 390 px wide phone. Screenshots of it go to
//! `docs/` with `AC_UPDATE_DOCS=1`.

use crate::support::browser::{Browser, docs_image};
use crate::support::llm::*;
use crate::support::worker::have_chromium;
use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "web-page-token-4711";
const LONG: Duration = Duration::from_secs(20);

/// A page for the scripted worker's screenshot: what a browser session would show.
const SHOP: &str = "<html><body style='margin:0;font:16px sans-serif;background:#fafafa'>\
<div style='background:#263238;color:#fff;padding:14px 24px;font-size:20px'>Example Docs · Reports</div>\
<div style='padding:24px'><h2>Quarterly reports</h2><ul>\
<li><a href='#'>report-2025-q4.pdf</a> (1.2 MB)</li><li><a href='#'>report-2025-q3.pdf</a> (1.1 MB)</li>\
<li><a href='#'>report-2025-q2.pdf</a> (0.9 MB)</li></ul>\
<button style='padding:8px 16px;background:#1565c0;color:#fff;border:0;border-radius:4px'>Download all</button></div></body></html>";

fn script() -> Vec<Step> {
    let pause = Duration::from_millis(700);
    vec![
        tool("browser_navigate", json!({"url": "https://docs.example.test/reports"})).delayed(pause),
        tool("browser_screenshot", json!({})).delayed(pause),
        tools(
            Some("The reports page lists three PDFs."),
            &[(
                "request_confirmation",
                json!({"action": "download", "description": "Download the Q4 report (1.2 MB)",
                       "details": ["report-2025-q4.pdf", "from docs.example.test"], "risk_level": "medium"}),
            )],
        )
        .delayed(pause),
        tool("browser_download", json!({"url": "https://docs.example.test/report-2025-q4.pdf"})).delayed(pause),
        tools(
            None,
            &[
                ("save_file", json!({"filename": "reports.csv", "content": "quarter,size_mb\n2025-q4,1.2\n"})),
                ("save_note", json!({"title": "Reports", "content": "three quarterly PDFs, Q4 is the newest"})),
            ],
        )
        .delayed(pause),
        tool(
            "finish_task",
            json!({"summary": "Downloaded the Q4 report", "report_markdown":
                "# Q4 report\n\nDownloaded **report-2025-q4.pdf** from [the docs](https://docs.example.test/reports).\n\n\
                 - reports.csv lists the sizes\n- `report-2025-q4.pdf` is 1.2 MB\n\n\
                 <script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\">\n\n\
                 [bad link](javascript:window.pwned=3)\n"}),
        )
        .delayed(pause),
    ]
}

fn worker(d: &TestDaemon, png: Arc<Mutex<Vec<u8>>>) -> ScriptedWorker {
    use base64::Engine;
    let uploader = d.worker_client();
    ScriptedWorker::start(&d.worker_client(), "web-box", &["browser"], false, move |cmd| match cmd["action"].as_str() {
        Some("browser_screenshot") => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&*png.lock().unwrap());
            json!({"success": true, "data": {"image_base64": b64, "media_type": "image/png", "width": 1000, "height": 640}})
        }
        Some("browser_download") => {
            json!({"success": true, "data": upload_as_worker(&uploader, cmd, "report-2025-q4.pdf", b"%PDF-1.4 q4")})
        }
        _ => json!({"success": true, "data": {"ok": true}}),
    })
}

fn log_count(b: &mut Browser) -> u64 {
    b.eval("document.querySelectorAll('#log li').length").as_u64().unwrap()
}

#[test]
fn the_page_drives_a_session_from_start_to_download() {
    if !have_chromium() {
        return;
    }
    let dir = TempDir::new("web");
    let (d, _llm) = llm_daemon(dir.path(), script(), |c| {
        c.server.api_token = agent_controller::util::secret::Secret::new(TOKEN);
    });
    let png = Arc::new(Mutex::new(Vec::new()));
    let _worker = worker(&d, Arc::clone(&png));
    let mut b = Browser::launch(1280, 900);
    let downloads = TempDir::new("web-downloads");
    b.allow_downloads(downloads.path());
    // The "target" the worker shows, rendered by the same browser before the test starts.
    b.viewport(1000, 640, false);
    let shop = percent_encoding::utf8_percent_encode(SHOP, percent_encoding::NON_ALPHANUMERIC);
    b.navigate(&format!("data:text/html;charset=utf-8,{shop}"));
    *png.lock().unwrap() = b.png();
    b.viewport(1280, 900, false);
    b.events.clear();

    // The page is served without the token and asks for it.
    b.navigate(&format!("{}/", d.api));
    b.wait_for("!document.getElementById('token-panel').hidden", LONG);
    b.pump(Duration::from_millis(500));
    let asked = b.requests().len();
    b.type_into("#token-input", TOKEN);
    b.click("#token-form button");
    b.wait_for(
        "document.getElementById('token-panel').hidden && document.getElementById('f-llm').options.length > 0",
        LONG,
    );

    // Create a task from the form.
    b.type_into("#f-target", "https://docs.example.test/reports");
    b.type_into("#f-what", "Download the newest quarterly report");
    let typed = b.eval("[document.getElementById('f-target').value, document.getElementById('f-what').value]");
    assert_eq!(typed, json!(["https://docs.example.test/reports", "Download the newest quarterly report"]));
    b.click("#f-submit");
    b.wait_for("location.hash.startsWith('#s/') && document.querySelectorAll('#log li').length > 0", LONG);
    let first = log_count(&mut b);
    b.wait_for(&format!("document.querySelectorAll('#log li').length > {first}"), LONG);

    // The confirmation shows; approve it with a click.
    b.wait_for("!document.getElementById('confirm').hidden", LONG);
    b.wait_for("!document.getElementById('shot').hidden && document.getElementById('shot').naturalWidth > 0", LONG);
    let desc = b.eval("document.getElementById('c-desc').textContent");
    assert_eq!(desc, "Download the Q4 report (1.2 MB)");
    let details = b.eval("[...document.querySelectorAll('#c-details li')].map(e => e.textContent)");
    assert_eq!(details, json!(["report-2025-q4.pdf", "from docs.example.test"]));
    b.screenshot(&docs_image("web-confirmation.png"));
    b.click("#c-approve");
    b.wait_for("document.getElementById('confirm').hidden", LONG);

    // The session finishes; the report is rendered, and none of the model's markup ran.
    b.wait_for("document.getElementById('s-status').textContent === 'finished'", LONG);
    b.wait_for("document.querySelector('#report h4') !== null", LONG);
    check_report(&mut b);
    b.wait_for("document.querySelector('#files button[data-file=\"reports.csv\"]') !== null", LONG);
    b.screenshot(&docs_image("web-session.png"));

    // Download a file through the page (with the token: fetched, then saved from a blob).
    b.click("#files button[data-file=\"reports.csv\"]");
    let saved = downloads.path().join("reports.csv");
    wait_until(LONG, "the download", || std::fs::read(&saved).ok().filter(|b| !b.is_empty()));
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "quarter,size_mb\n2025-q4,1.2\n");

    check_requests(&b, &d.api, asked);
    // The recording plays on the session's view (a frame per acting step, here 1×1 each).
    b.click("#rec-play");
    b.wait_for("!document.getElementById('rec').hidden && document.getElementById('rec').naturalWidth > 0", LONG);
    assert_eq!(b.errors(), Vec::<String>::new(), "the page logged errors");

    // A phone: one column, nothing wider than the screen.
    let here = b.eval("location.href").as_str().unwrap().to_string();
    b.viewport(390, 844, true);
    b.navigate("about:blank");
    b.navigate(&here);
    b.wait_for("document.getElementById('s-status').textContent === 'finished'", LONG);
    b.wait_for("document.querySelector('#report h4') !== null", LONG);
    let width = b.eval("document.documentElement.scrollWidth").as_u64().unwrap();
    assert!(width <= 390, "the page is {width} px wide at a 390 px viewport");
    let columns = b.eval("getComputedStyle(document.getElementById('app')).gridTemplateColumns.split(' ').length");
    assert_eq!(columns, json!(1));
    b.screenshot(&docs_image("web-phone.png"));
    assert_eq!(b.errors(), Vec::<String>::new(), "the page logged errors on a phone");
}

fn check_report(b: &mut Browser) {
    assert_eq!(b.eval("document.querySelector('#report h4').textContent"), "Q4 report");
    assert_eq!(b.eval("document.querySelector('#report strong').textContent"), "report-2025-q4.pdf");
    assert_eq!(b.eval("document.querySelectorAll('#report li').length"), 2);
    let links = b.eval("[...document.querySelectorAll('#report a')].map(a => a.href)");
    assert_eq!(links, json!(["https://docs.example.test/reports"]), "only http(s) links become links");
    assert_eq!(b.eval("document.querySelectorAll('#report script, #report img').length"), 0);
    assert_eq!(b.eval("window.pwned === undefined"), true);
    let text = b.eval("document.getElementById('report').textContent").as_str().unwrap().to_string();
    assert!(text.contains("<script>window.pwned = 1</script>"), "markup is shown as text: {text}");
}

/// Every request went to the daemon; once the token was typed (request `asked`), every one but
/// the page's own files carried it.
fn check_requests(b: &Browser, api: &str, asked: usize) {
    let requests = b.requests();
    assert!(requests.len() > 10, "{requests:?}");
    for (i, (url, headers)) in requests.iter().enumerate() {
        let local = url.starts_with(&format!("{api}/")) || url.starts_with("blob:") || url.starts_with("data:");
        assert!(local, "a request left the daemon: {url}");
        let path = url.strip_prefix(api).unwrap_or("");
        let public = path == "/" || path.starts_with("/web/") || url.starts_with("blob:") || path == "/health";
        if !public && i >= asked {
            let auth = headers.as_object().unwrap().iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization"));
            assert_eq!(auth.map(|(_, v)| v.clone()), Some(json!(format!("Bearer {TOKEN}"))), "{url} without the token");
        }
    }
    let shots: Vec<(String, u64)> = b.responses().into_iter().filter(|(u, _)| u.contains("/files/step_")).collect();
    assert!(shots.iter().any(|(_, s)| *s == 200), "the screenshot was fetched: {shots:?}");
}

#[test]
fn static_files_are_public_strict_and_cacheable_and_data_is_not() {
    let dir = TempDir::new("web-static");
    let mut config = test_config(dir.path());
    config.server.api_token = agent_controller::util::secret::Secret::new(TOKEN);
    let d = TestDaemon::idle(config);
    let anon = d.client().with_token(None);
    for (path, kind) in [("/", "text/html"), ("/web/app.js", "text/javascript"), ("/web/app.css", "text/css")] {
        let r = anon.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert!(r.header("content-type").unwrap().starts_with(kind), "{path}");
        let csp = r.header("content-security-policy").unwrap();
        for part in ["default-src 'self'", "script-src 'self'", "require-trusted-types-for 'script'"] {
            assert!(csp.contains(part), "{csp}");
        }
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        let etag = r.header("etag").unwrap().to_string();
        let again = anon.request("GET", path, None, None);
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        let cached = raw_get(&d.api, path, &[("If-None-Match", etag.as_str())]);
        assert!(cached.starts_with("HTTP/1.1 304"), "{cached}");
    }
    assert_error(&anon.get("/web/nothing.js"), 404, "not_found");
    for path in ["/llms", "/sessions", "/openapi.json", "/metrics"] {
        assert_error(&anon.get(path), 401, "unauthorized");
    }
    let llms = d.client().get("/llms").json();
    assert_eq!(llms[0]["name"], "api");
    assert_eq!(llms[0]["default"], true);
    assert!(llms[0].get("api_key").is_none() && llms[0].get("base_url").is_none());
}

/// Screenshots and files carry an ETag; a matching If-None-Match gets 304 and no body.
#[test]
fn files_answer_304_to_a_matching_etag() {
    let dir = TempDir::new("web-etag");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _ = register(&d.worker_client(), json!({"hostname": "e", "capabilities": ["browser"]}));
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "i"}));
    let (runner, _done) = test_agent.next();
    runner.store_screenshot(1, b"\x89PNG fake").unwrap();
    let path = format!("/sessions/{id}/files/step_0001.png");
    let r = c.get(&path);
    assert_eq!(r.status, 200);
    let etag = r.header("etag").unwrap().to_string();
    let cached = raw_get(&d.api, &path, &[("If-None-Match", etag.as_str())]);
    assert!(cached.starts_with("HTTP/1.1 304"), "{cached}");
    assert!(cached.ends_with("\r\n\r\n"), "no body: {cached:?}");
    let other = raw_get(&d.api, &path, &[("If-None-Match", "\"something-else\"")]);
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
}

/// A GET with extra headers over a raw socket (the test client follows no conditional rules,
/// but this shows exactly what goes over the wire).
fn raw_get(api: &str, path: &str, headers: &[(&str, &str)]) -> String {
    use std::io::{Read, Write};
    let addr = api.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Without a token: no prompt, the stop button stops, a download is a plain link.
#[test]
fn without_a_token_the_page_stops_sessions_and_links_downloads() {
    if !have_chromium() {
        return;
    }
    let dir = TempDir::new("web-open");
    let (test_agent, agent) = TestAgent::new();
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _ = register(&d.worker_client(), json!({"hostname": "open-box", "capabilities": ["shell"]}));
    let mut b = Browser::launch(1100, 800);
    let downloads = TempDir::new("web-open-downloads");
    b.allow_downloads(downloads.path());
    b.navigate(&format!("{}/", d.api));
    b.wait_for("document.getElementById('f-llm').options.length > 0", LONG);
    assert_eq!(b.eval("document.getElementById('token-panel').hidden"), true);

    // A shell task from the form; the test plays the agent: a file, then the stop button.
    b.eval("document.getElementById('f-type').value = 'shell'");
    b.type_into("#f-target", "build-host");
    b.type_into("#f-what", "collect the build logs");
    b.click("#f-submit");
    let (runner, _done) = test_agent.next();
    runner.store_file("build.log", b"ok\n", agent_controller::protocol::FileKind::Generated).unwrap();
    b.wait_for("document.querySelector('#files button[data-file=\"build.log\"]') !== null", LONG);
    b.wait_for("document.getElementById('s-status').textContent === 'running'", LONG);
    b.click("#s-stop");
    b.wait_for("document.getElementById('s-status').textContent === 'stopped'", LONG);
    b.wait_for("document.getElementById('s-stop').hidden", LONG);
    let listed = "[...document.querySelectorAll('#sessions .badge')].map(e => e.textContent)";
    b.wait_for(&format!("{listed}.includes('stopped')"), LONG);

    b.click("#files button[data-file=\"build.log\"]");
    let saved = downloads.path().join("build.log");
    wait_until(LONG, "the download", || std::fs::read(&saved).ok().filter(|b| !b.is_empty()));
    assert_eq!(std::fs::read(&saved).unwrap(), b"ok\n");
    // The link went straight to the file (no blob: a big file streams to disk).
    b.pump(Duration::from_millis(300));
    let began: Vec<&str> = b
        .events
        .iter()
        .filter(|e| e["method"] == "Browser.downloadWillBegin")
        .filter_map(|e| e["params"]["url"].as_str())
        .collect();
    let kinds: Vec<&Value> =
        b.events.iter().map(|e| &e["method"]).filter(|m| m.to_string().contains("ownload")).collect();
    assert_eq!(
        began,
        [format!("{}/sessions/{}/files/build.log", d.api, runner.session_id())],
        "a plain link: {kinds:?}"
    );
    assert_eq!(b.errors(), Vec::<String>::new(), "the page logged errors");
}

#[test]
fn the_page_lists_schedules_and_runs_one_now() {
    if !have_chromium() {
        return;
    }
    let dir = TempDir::new("web-schedules");
    let agent: agent_controller::session::AgentFn =
        Arc::new(|_| agent_controller::session::AgentOutcome::Finished { summary: "done".into() });
    let d = TestDaemon::start(test_config(dir.path()), agent);
    let _w = ScriptedWorker::start(&d.worker_client(), "sched-web", &["browser"], true, |_| json!({"success": true}));
    let c = d.client();
    let body = json!({"name": "yearly", "cron": "0 3 1 1 *",
                      "session": {"mode": "task", "target": "https://x.test/", "instruction": "fetch it"}});
    assert_eq!(c.post("/schedules", &body).status, 201);
    let mut b = Browser::launch(1100, 800);
    b.navigate(&format!("{}/", d.api));
    b.wait_for("!document.getElementById('schedules-panel').hidden", LONG);
    let row = "document.querySelector('#schedules li[data-name=\"yearly\"]').textContent";
    b.wait_for(&format!("{row}.includes('not run yet') && {row}.includes('next: ')"), LONG);
    b.click("#schedules li[data-name=\"yearly\"] button.run-now");
    b.wait_for(&format!("{row}.includes('last: run 1')"), LONG);
    let run = &c.get("/sessions?schedule=yearly").json()[0];
    assert_eq!(run["schedule"], json!({"name": "yearly", "run": 1}));
    b.wait_for(&format!("location.hash.includes('{}')", run["session_id"].as_str().unwrap()), LONG);
    assert_eq!(b.errors(), Vec::<String>::new(), "the page logged errors");
}

//! The agent loop end to end: the real daemon, a scripted Anthropic server speaking the wire
//! format, scripted workers, REST for confirmations, a local webhook receiver.

use crate::support::llm::*;
use crate::support::*;
use agent_controller::protocol::tools::Tool;
use agent_controller::protocol::{Mode, SessionType};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Fields drop in order: the daemon stops before its folder is removed.
pub(crate) struct World {
    pub(crate) d: TestDaemon,
    pub(crate) llm: ScriptedLlm,
    pub(crate) dir: TempDir,
}

pub(crate) fn world(tag: &str, script: Vec<Step>, tune: impl FnOnce(&mut agent_controller::config::Config)) -> World {
    let dir = TempDir::new(tag);
    let (d, llm) = llm_daemon(dir.path(), script, tune);
    World { d, llm, dir }
}

/// A browser worker that answers like a real one would.
pub(crate) fn browser_worker(d: &TestDaemon, hostname: &str) -> ScriptedWorker {
    let uploader = d.worker_client();
    ScriptedWorker::start(&d.worker_client(), hostname, &["browser"], false, move |cmd| {
        let p = &cmd["params"];
        match cmd["action"].as_str().unwrap() {
            "browser_scrape_links" => json!({"success": true, "data": {"links": [
                {"text": "Chapter 1", "url": "https://books.test/ch1.pdf"},
                {"text": "Chapter 2", "url": "https://books.test/ch2.pdf"}]}}),
            "browser_download_batch" => {
                let mut done = Vec::new();
                for u in p["urls"].as_array().unwrap() {
                    let url = u["url"].as_str().unwrap();
                    let name = url.rsplit('/').next().unwrap();
                    let bytes = format!("%PDF-1.4 fake body of {url}");
                    done.push(upload_as_worker(&uploader, cmd, name, bytes.as_bytes()));
                }
                json!({"success": true, "data": {"downloaded": done}})
            }
            "browser_screenshot" => {
                json!({"success": true, "data": {"image_base64": PNG_1X1, "media_type": "image/png", "width": 1, "height": 1}})
            }
            "browser_get_dom" => json!({"success": true, "data": {"outline": "x".repeat(50_000)}}),
            "browser_wait_for" if p["selector"] == "#hang" => {
                std::thread::sleep(Duration::from_secs(5));
                json!({"success": true, "data": {"after_ms": 5000}})
            }
            "browser_click" if p["selector"] == "#missing" => {
                json!({"success": false, "error": "no element matches `#missing`"})
            }
            _ => json!({"success": true, "data": {"ok": true, "action": cmd["action"]}}),
        }
    })
}

pub(crate) fn conversation(w: &World, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(w.dir.path().join(id).join("conversation_log.json")).unwrap()).unwrap()
}

/// Every tool_use in the saved conversation has its tool_result.
pub(crate) fn assert_conversation_complete(conv: &Value) {
    let violations = std::sync::Mutex::new(Vec::new());
    check_pairs(conv, &violations);
    let v = violations.into_inner().unwrap();
    assert!(v.is_empty(), "conversation_log.json: {v:?}");
}

pub(crate) fn approve_when_asked(c: &Client, id: &str, approved: bool) -> Value {
    let p = wait_until(Duration::from_secs(10), "confirmation", || {
        let v = c.get(&format!("/sessions/{id}/confirmation")).json();
        (v["pending"] == true).then_some(v)
    });
    let r = c.post(
        &format!("/sessions/{id}/confirmation"),
        &json!({"confirmation_id": p["confirmation_id"], "approved": approved}),
    );
    assert_eq!(r.status, 200);
    p
}

#[test]
fn seed_download_flow_end_to_end() {
    let hook = Receiver::start();
    let script = vec![
        tools(
            Some("Let me look for the PDFs."),
            &[("browser_scrape_links", json!({"selector": "a", "pattern": "\\.pdf$"}))],
        ),
        tool(
            "request_confirmation",
            json!({"action": "batch_download", "description": "Download 2 PDF files", "details": ["ch1.pdf", "ch2.pdf"], "risk_level": "medium"}),
        ),
        tool(
            "browser_download_batch",
            json!({"urls": [{"url": "https://books.test/ch1.pdf"}, {"url": "https://books.test/ch2.pdf"}]}),
        ),
        tools(
            None,
            &[
                (
                    "save_file",
                    json!({"filename": "chapters.csv", "content": "title,url\nChapter 1,https://books.test/ch1.pdf\nChapter 2,https://books.test/ch2.pdf\n"}),
                ),
                ("save_note", json!({"title": "Downloads", "content": "Both chapters downloaded"})),
            ],
        ),
        tool("send_notification", json!({"message": "Downloaded 2 PDFs", "include_files": true})),
        tool(
            "finish_task",
            json!({"summary": "Downloaded 2 chapter PDFs and listed them in chapters.csv", "report_markdown": "# Done\n\nTwo PDFs downloaded."}),
        ),
    ];
    // The receiver is on loopback, which webhooks may reach only when allowed.
    let w = world("downloadflow", script, |c| c.notifications.allow_private = true);
    let c = w.d.client();
    let worker = browser_worker(&w.d, "books-pc");
    let hook_url = format!("{}/hook?token=SECRET-HOOK-TOKEN", hook.url);
    let id = create_session(
        &c,
        json!({
            "mode": "task", "target": "https://books.test/", "instruction": "Download all chapter PDFs",
            "notifications": {"webhook": {"url": hook_url, "method": "POST"}}
        }),
    );
    let p = approve_when_asked(&c, &id, true);
    assert_eq!(p["action"], "batch_download");
    assert_eq!(p["details"], json!(["ch1.pdf", "ch2.pdf"]));
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "Downloaded 2 chapter PDFs and listed them in chapters.csv");
    assert_eq!(s["turn"], 6);
    assert_eq!(s["usage"]["input_tokens"], 600);
    assert_eq!(s["usage"]["output_tokens"], 120);
    assert_eq!(s["usage"]["cache_read_input_tokens"], 300);
    assert_eq!(s["files"], 3);

    // What the worker was asked to do, in order.
    let actions: Vec<String> =
        worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect();
    assert_eq!(
        actions,
        vec!["browser_navigate", "browser_scrape_links", "browser_download_batch"],
        "the page opened first"
    );

    // Files, byte for byte, and the zip.
    assert_eq!(
        c.get(&format!("/sessions/{id}/files/ch1.pdf")).text(),
        "%PDF-1.4 fake body of https://books.test/ch1.pdf"
    );
    assert!(c.get(&format!("/sessions/{id}/files/chapters.csv")).text().starts_with("title,url\n"));
    let kinds: Vec<(String, String)> = c
        .get(&format!("/sessions/{id}/files"))
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["filename"].as_str().unwrap().into(), f["type"].as_str().unwrap().into()))
        .collect();
    assert!(
        kinds.contains(&("chapters.csv".into(), "generated".into()))
            && kinds.contains(&("ch2.pdf".into(), "download".into())),
        "{kinds:?}"
    );
    let zip = c.get(&format!("/sessions/{id}/files/zip"));
    let archive = zip::ZipArchive::new(std::io::Cursor::new(zip.body)).unwrap();
    assert_eq!(archive.len(), 3);

    // Report, notes, log.
    assert_eq!(c.get(&format!("/sessions/{id}/report")).json()["report"], "# Done\n\nTwo PDFs downloaded.");
    assert_eq!(c.get(&format!("/sessions/{id}/notes")).json()[0]["content"], "Both chapters downloaded");
    let log = c.get(&format!("/sessions/{id}/log")).json();
    let kinds: Vec<&str> = log["entries"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    for k in ["system", "assistant", "tool", "result", "confirmation"] {
        assert!(kinds.contains(&k), "log has no {k} entry: {kinds:?}");
    }

    // The webhook got the tool's message with the files, then one end notification.
    let hits = wait_until(Duration::from_secs(10), "two webhook calls", || {
        let h = hook.hits();
        (h.len() >= 2).then_some(h)
    });
    assert_eq!(hits[0].0, "POST");
    assert_eq!(hits[0].1, "/hook?token=SECRET-HOOK-TOKEN");
    assert_eq!(hits[0].2["message"], "Downloaded 2 PDFs");
    assert_eq!(hits[0].2["session_id"], id.as_str());
    let mut files: Vec<String> =
        hits[0].2["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();
    files.sort();
    assert_eq!(files, vec!["ch1.pdf", "ch2.pdf", "chapters.csv"]);
    assert!(hits[1].2["message"].as_str().unwrap().contains("finished"), "{:?}", hits[1]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(hook.hits().len(), 2, "exactly one end notification");

    // What was sent to the model.
    w.llm.assert_well_formed();
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 6);
    let first = &reqs[0];
    assert_eq!(first.header("x-api-key"), Some("sk-test-key-123"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.body["max_tokens"], 4096);
    assert_eq!(first.body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    let tools = first.body["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(tools.iter().filter(|t| t.get("cache_control").is_some()).count(), 1);
    let names = first.tool_names();
    assert_eq!(names, catalog(Mode::Task, SessionType::Browser, false), "the whole catalog of task·browser");
    for seed in ["browser_scrape_links", "browser_download_batch", "browser_get_text", "browser_submit_form"] {
        assert!(names.iter().any(|n| n == seed), "{seed} is offered");
    }
    assert!(!first.tool_names().contains(&"perform_login".to_string()));
    let opening = first.body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(opening.contains("Download all chapter PDFs") && opening.contains("https://books.test/"));
    // The confirmation answer reached the model as {"approved": true}.
    let results = reqs[2].last_results();
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(
        serde_json::from_str::<Value>(results[0]["content"][0]["text"].as_str().unwrap()).unwrap(),
        json!({"approved": true})
    );
    assert_eq!(results[0]["is_error"], false);

    let conv = conversation(&w, &id);
    assert_conversation_complete(&conv);
    assert_eq!(conv["session_id"], id.as_str());
    // The webhook's secret query never reached disk.
    for (path, bytes) in all_files(w.dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains("SECRET-HOOK-TOKEN"), "{path:?}");
    }
}

#[test]
fn explore_browser_tool_sets_and_login_keep_the_password_out() {
    let password = "Hunter2-PLANTED-pw";
    let script = vec![
        // Without credentials: one turn, then finish.
        tool("finish_exploration", json!({"summary": "small site", "report_markdown": "# Site\nTiny."})),
        // With credentials: log in, click something missing (tool error), bad args, unknown tool, finish.
        tool("perform_login", json!({})),
        tools(
            None,
            &[
                ("browser_click", json!({"selector": "#missing"})),
                ("browser_click", json!({})),
                ("browser_download", json!({"url": "x"})),
            ],
        ),
        tool("finish_exploration", json!({"summary": "logged in and looked around"})),
    ];
    let w = world("explore", script, |_| {});
    let c = w.d.client();
    let worker = browser_worker(&w.d, "explorer");
    let id1 = create_session(&c, json!({"mode": "explore", "target": "https://shop.test/"}));
    wait_status(&c, &id1, "finished");
    assert_eq!(c.get(&format!("/sessions/{id1}/report")).json()["report"], "# Site\nTiny.");
    let id2 = create_session(
        &c,
        json!({"mode": "explore", "target": "https://shop.test/",
        "credentials": {"username": "alice", "password": password, "login_url": "https://shop.test/login"}}),
    );
    let s = wait_status(&c, &id2, "finished");
    assert_eq!(s["summary"], "logged in and looked around");

    let reqs = w.llm.requests();
    w.llm.assert_well_formed();
    // The default profile (full) lists the seed's whole catalog for the mode and type.
    assert_eq!(reqs[0].tool_names(), catalog(Mode::Explore, SessionType::Browser, false));
    assert_eq!(reqs[1].tool_names(), catalog(Mode::Explore, SessionType::Browser, true));
    assert!(reqs[0].body["system"][0]["text"].as_str().unwrap().contains("only observe"));

    // The login ran on the worker: navigate, a wait for the sign-in form, username, password
    // (in that form), submit; no screenshot.
    let seen = worker.seen.lock().unwrap().clone();
    let all: Vec<&Value> = seen.iter().filter(|c| c["session_id"] == id2.as_str()).collect();
    assert_eq!(all[0]["params"]["url"], "https://shop.test/", "the session opened its target first");
    let login = &all[1..];
    assert_eq!(login[0]["action"], "browser_navigate");
    assert_eq!(login[0]["params"]["url"], "https://shop.test/login");
    assert_eq!(login[1]["action"], "browser_wait_for");
    let form = login[1]["params"]["selector"].as_str().unwrap();
    assert!(form.starts_with("form:has(input[type=password]):not("), "{form}");
    assert_eq!(login[2]["params"]["text"], "alice");
    assert_eq!(login[3]["params"]["text"], password, "only the worker command carries the password");
    assert_eq!(login[3]["params"]["selector"], format!("{form} input[type=password]"));
    assert_eq!(login[4]["action"], "browser_click");
    assert_eq!(login.len(), 5 + 1, "then the one click of the next turn with valid arguments");
    // The model got text back from the login (every model reads it), and tool errors for the bad calls.
    assert_eq!(reqs[2].image_count(), 0);
    assert!(reqs[2].last_results()[0].to_string().contains("Submitted the login form"));
    let results = reqs[3].last_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results.iter().all(|r| r["is_error"] == true), "{results:?}");
    let texts: Vec<&str> = results.iter().map(|r| r["content"][0]["text"].as_str().unwrap()).collect();
    assert!(texts[0].contains("no element matches `#missing`"), "{texts:?}");
    assert!(texts[1].contains("missing required `selector`"), "{texts:?}");
    assert!(texts[2].contains("unknown tool `browser_download`"), "{texts:?}");

    // The password is nowhere: not in what the model saw, not on disk, not in the API.
    for r in &reqs {
        assert!(!r.body.to_string().contains(password), "the model saw the password");
    }
    for (path, bytes) in all_files(w.dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains(password), "password in {path:?}");
    }
    for path in ["", "/log", "/notes", "/report"] {
        assert!(!c.get(&format!("/sessions/{id2}{path}")).text().contains(password));
    }
}

#[test]
fn stop_during_a_confirmation_wait_a_slow_llm_call_and_a_command_wait() {
    // Issue 3's bar: after DELETE the session thread ends within 1 s, wherever it waits.
    let within = Duration::from_secs(1);
    let script = vec![
        tool("request_confirmation", json!({"action": "submit", "description": "Submit the form"})),
        // After each stop, one call without tools writes the report, off the session's thread.
        text("Nothing was submitted: stopped at the confirmation."),
        tool("save_note", json!({"content": "x"})).delayed(Duration::from_secs(30)),
        text("Stopped while thinking."),
        tool("browser_wait_for", json!({"selector": "#hang"})),
        text("Stopped while waiting for #hang."),
    ];
    let w = world("stops", script, |_| {});
    let c = w.d.client();
    let worker = browser_worker(&w.d, "s");
    // 1. Stop while waiting for a confirmation.
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    wait_until(Duration::from_secs(10), "pending", || {
        (c.get(&format!("/sessions/{id}/confirmation")).json()["pending"] == true).then_some(())
    });
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    wait_until(within, "lease released (agent thread ended)", || {
        c.get("/workers").json()[0]["session_id"].is_null().then_some(())
    });
    assert!(t.elapsed() < within);
    let conv = conversation(&w, &id);
    assert_conversation_complete(&conv);
    let last = conv["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["is_error"], true);
    let report = wait_until(Duration::from_secs(10), "the report after the stop", || {
        let r = c.get(&format!("/sessions/{id}/report")).json()["report"].as_str().map(str::to_string);
        r.filter(|r| r.contains("stopped at the confirmation"))
    });
    assert!(report.contains("## Outcome\n\nStopped by request.\n\n"), "{report}");
    let asked = w.llm.requests()[1].body.clone();
    assert!(asked.get("tools").is_none() && asked["messages"].to_string().contains("stopped by a person"), "{asked}");
    // 2. Stop during a slow model call.
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "y"}));
    wait_until(Duration::from_secs(10), "the slow call", || (w.llm.requests().len() == 3).then_some(()));
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    wait_until(within, "lease released (agent thread ended)", || {
        c.get("/workers").json()[0]["session_id"].is_null().then_some(())
    });
    assert!(t.elapsed() < within, "{:?}", t.elapsed());
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "stopped");
    assert_conversation_complete(&conversation(&w, &id));
    // 3. Stop while a worker command is out (the worker takes 5 s to answer it).
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "z"}));
    wait_until(Duration::from_secs(10), "the worker has the command", || {
        worker.seen.lock().unwrap().iter().any(|cmd| cmd["params"]["selector"] == "#hang").then_some(())
    });
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    wait_until(within, "lease released (agent thread ended)", || {
        c.get("/workers").json()[0]["session_id"].is_null().then_some(())
    });
    assert!(t.elapsed() < within, "{:?}", t.elapsed());
    assert_conversation_complete(&conversation(&w, &id));
}

#[test]
fn only_the_last_three_screenshots_stay_in_context() {
    // Each with a different note, so five screenshots of an unchanged page are no loop.
    let mut script: Vec<Step> = (0..5)
        .map(|i| {
            tools(None, &[("browser_screenshot", json!({})), ("save_note", json!({"content": format!("look {i}")}))])
        })
        .collect();
    script.push(tool("finish_task", json!({"summary": "looked five times"})));
    let w = world("trim", script, |_| {});
    let _worker = browser_worker(&w.d, "t");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    wait_status(&w.d.client(), &id, "finished");
    let counts: Vec<usize> = w.llm.requests().iter().map(Recorded::image_count).collect();
    assert_eq!(counts, vec![0, 1, 2, 3, 3, 3]);
    // All five were stored.
    let shots: Vec<Value> =
        w.d.client()
            .get(&format!("/sessions/{id}/files"))
            .json()
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["type"] == "screenshot")
            .cloned()
            .collect();
    assert_eq!(shots.len(), 5);
    let png = w.d.client().get(&format!("/sessions/{id}/files/step_0001.png"));
    assert!(png.body.starts_with(b"\x89PNG"));
    // The stored conversation keeps no image data.
    let conv = conversation(&w, &id).to_string();
    assert!(!conv.contains(PNG_1X1));
}

#[test]
fn a_denied_confirmation_is_told_to_the_model_which_goes_on() {
    let script = vec![
        tool(
            "request_confirmation",
            json!({"action": "submit_form", "description": "Send the order", "risk_level": "high"}),
        ),
        tool("finish_task", json!({"summary": "not submitted: the user declined"})),
    ];
    let w = world("deny", script, |_| {});
    let c = w.d.client();
    let _worker = browser_worker(&w.d, "d");
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "order"}));
    let p = approve_when_asked(&c, &id, false);
    assert_eq!(p["risk_level"], "high");
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "not submitted: the user declined");
    let results = w.llm.requests()[1].last_results();
    assert_eq!(
        serde_json::from_str::<Value>(results[0]["content"][0]["text"].as_str().unwrap()).unwrap(),
        json!({"approved": false})
    );
}

#[test]
fn big_tool_output_is_stored_and_previewed_and_a_text_reply_is_nudged_once() {
    let script = vec![tool("browser_get_dom", json!({})), text("I think I am done."), text("Really done.")];
    let w = world("bigoutput", script, |c| c.agent.max_tool_output_chars = 10_000);
    let _worker = browser_worker(&w.d, "b");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let s = wait_status(&w.d.client(), &id, "finished");
    assert_eq!(s["summary"], "Really done.");
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 3);
    let preview = reqs[1].last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(preview.len() < 3000 && preview.contains("\"id\":\"out_001_browser_get_dom\""), "{preview}");
    let stored = std::fs::read_to_string(w.dir.path().join(&id).join("tool_outputs/out_001_browser_get_dom.txt"));
    assert!(stored.unwrap().len() > 50_000);
    // The nudge.
    let last = reqs[2].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"][0]["text"].as_str().unwrap().contains("finish_task"));
}

#[test]
fn telegram_gets_the_end_notification_and_the_token_stays_off_disk() {
    let telegram = Receiver::start();
    let tg_url = telegram.url.clone();
    let w = world("telegram", vec![tool("finish_exploration", json!({"summary": "seen it all"}))], move |c| {
        c.notifications.telegram_base_url = tg_url;
    });
    let _worker = browser_worker(&w.d, "tg");
    let token = "123456:PLANTED-TG-TOKEN";
    let id = create_session(
        &w.d.client(),
        json!({"mode": "explore", "target": "https://x.test",
        "notifications": {"telegram": {"bot_token": token, "chat_id": "4242"}}}),
    );
    wait_status(&w.d.client(), &id, "finished");
    let hits = wait_until(Duration::from_secs(10), "telegram call", || {
        let h = telegram.hits();
        (!h.is_empty()).then_some(h)
    });
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].0, "POST");
    assert_eq!(hits[0].1, format!("/bot{token}/sendMessage"));
    assert_eq!(hits[0].2["chat_id"], "4242");
    assert!(hits[0].2["text"].as_str().unwrap().contains("seen it all"));
    wait_until(Duration::from_secs(5), "the delivery to be logged", || {
        let log = w.d.client().get(&format!("/sessions/{id}/log")).text();
        log.contains("end notification sent (telegram)").then_some(())
    });
    for (path, bytes) in all_files(w.dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains("PLANTED-TG-TOKEN"), "{path:?}");
    }
}

#[test]
fn shell_task_runs_commands_and_searches_its_history() {
    let script = vec![
        tool("run_command", json!({"command": "uname -a", "timeout_s": 5})),
        tool("search_history", json!({"query": "LINUX-KERNEL-6"})),
        tool("search_history", json!({"query": "KERNEL-6"})),
        tool("finish_task", json!({"summary": "found the kernel"})),
    ];
    let w = world("shell", script, |_| {});
    let _worker = ScriptedWorker::start(&w.d.worker_client(), "box", &["shell"], false, |cmd| {
        assert_eq!(cmd["action"], "run_command");
        json!({"success": true, "data": {"exit_code": 0, "stdout": "LINUX-KERNEL-6.1 x86_64", "stderr": ""}})
    });
    let id = create_session(
        &w.d.client(),
        json!({"mode": "task", "type": "shell", "target": "box", "instruction": "which kernel?"}),
    );
    wait_status(&w.d.client(), &id, "finished");
    let reqs = w.llm.requests();
    assert_eq!(reqs[0].tool_names(), catalog(Mode::Task, SessionType::Shell, false), "the whole catalog");
    let found: Value = serde_json::from_str(&reqs[2].last_result_data()).unwrap();
    let matches = found["matches"].as_array().unwrap();
    assert!(!matches.is_empty() && matches.iter().all(|m| m.to_string().contains("LINUX-KERNEL-6")), "{found}");
    // The second search does not find the first one's answer (it would grow with each search).
    let again = reqs[3].last_result_data();
    assert!(!again.contains("matches\\\""), "{again}");
    assert_eq!(serde_json::from_str::<Value>(&again).unwrap()["matches"].as_array().unwrap().len(), matches.len());
}

#[test]
fn a_repeated_failing_call_is_pointed_out() {
    let script = vec![
        tool("browser_click", json!({"selector": "#missing"})),
        tool("browser_click", json!({"selector": "#missing"})),
        tool("finish_task", json!({"summary": "gave up"})),
    ];
    let w = world("repeat", script, |_| {});
    let _worker = browser_worker(&w.d, "rep");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    wait_status(&w.d.client(), &id, "finished");
    let reqs = w.llm.requests();
    let first = reqs[1].last_results()[0]["content"].as_array().unwrap().len();
    let second = reqs[2].last_results()[0]["content"].clone();
    assert_eq!(first, 1);
    assert!(second[1]["text"].as_str().unwrap().contains("already failed the same way"), "{second}");
}

#[test]
fn an_unanswered_confirmation_reaches_the_model_as_a_timeout() {
    let script = vec![
        tool("request_confirmation", json!({"action": "delete", "description": "Delete the drafts"})),
        tool("finish_task", json!({"summary": "left the drafts alone"})),
    ];
    let w = world("conftimeout", script, |c| c.task.confirmation_timeout = 1);
    let _worker = browser_worker(&w.d, "ct");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    wait_status(&w.d.client(), &id, "finished");
    let results = w.llm.requests()[1].last_results();
    let answer: Value = serde_json::from_str(results[0]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer, json!({"approved": false, "reason": "timeout"}));
}

#[test]
fn a_form_submit_waits_for_the_person_under_human_approval() {
    // The controller asks, whatever the model does: here it never calls request_confirmation.
    let script = vec![
        tool("browser_submit_form", json!({"selector": "#order"})),
        tool("browser_submit_form", json!({"selector": "#order"})),
        tool("finish_task", json!({"summary": "ordered"})),
    ];
    let w = world("submit-gate", script, |_| {});
    let c = w.d.client();
    let worker = browser_worker(&w.d, "g");
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://shop.test", "instruction": "order", "options": {"approval": "human"}}),
    );
    let submits = || worker.seen.lock().unwrap().iter().filter(|c| c["action"] == "browser_submit_form").count();
    let first = approve_when_asked(&c, &id, false);
    assert_eq!(first["details"]["tool"], "browser_submit_form", "{first}");
    assert_eq!(first["details"]["arguments"]["selector"], "#order", "{first}");
    approve_when_asked(&c, &id, true);
    wait_status(&c, &id, "finished");
    let reqs = w.llm.requests();
    assert!(reqs[1].last_results()[0].to_string().contains("not run: the user denied it"), "{:?}", reqs[1]);
    assert_eq!(submits(), 1, "only the approved submit reached the worker");
}

/// The names of every tool the table offers a session of this mode and type, in order.
fn catalog(mode: Mode, kind: SessionType, credentials: bool) -> Vec<String> {
    Tool::offered(mode, kind, credentials).iter().map(|t| t.name().to_string()).collect()
}

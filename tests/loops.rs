//! Loops that escalate and endings that keep what was found, through the real daemon and the
//! real agent on a scripted model and a scripted browser worker: the same call repeated, an
//! A/B cycle, both ending `error` "stuck: …" with a report the model still writes; and a
//! `finish_task` in a reply whose earlier call failed, which is not honoured.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};

/// A browser worker whose pages never change.
fn static_worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(&d.worker_client(), "loop-box", &["browser"], false, |cmd| {
        let p = &cmd["params"];
        match cmd["action"].as_str().unwrap() {
            "browser_snapshot" => {
                json!({"success": true, "data": {"url": "https://a.test/", "snapshot": "Page: \"A\" — https://a.test/ (HTTP 200)\n[e1] link \"Next\" → https://a.test/next"}})
            }
            "browser_navigate" => {
                json!({"success": true, "data": {"url": p["url"], "title": "same", "snapshot": "[e1] link \"Next\" → https://a.test/next"}})
            }
            "browser_click" => json!({"success": false, "error": "no element matches `#missing`"}),
            "browser_download" => json!({"success": true, "data": {"filename": "guide.pdf", "bytes": 17}}),
            _ => json!({"success": true, "data": {"ok": true}}),
        }
    })
}

/// A session on the static page that asks for answer.txt, run to `finished` with `script`:
/// the daemon, the model's server, the session's id and record.
fn answer_session(dir: &std::path::Path, script: Vec<Step>) -> (TestDaemon, ScriptedLlm, String, Value) {
    let (d, llm) = llm_daemon(dir, script, small);
    let _worker = static_worker(&d);
    let c = d.client();
    let task =
        json!({"mode": "task", "target": "https://a.test/", "instruction": "save the link's name in answer.txt"});
    let id = create_session(&c, task);
    let s = wait_status(&c, &id, "finished");
    (d, llm, id, s)
}

/// A task session with `body` on `worker` run to `finished` with `script`: the model's server,
/// for the requests it received.
fn finished_task(
    name: &str,
    script: Vec<Step>,
    worker: impl FnOnce(&TestDaemon) -> ScriptedWorker,
    body: Value,
) -> ScriptedLlm {
    let dir = TempDir::new(name);
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = worker(&d);
    let c = d.client();
    let id = create_session(&c, body);
    wait_status(&c, &id, "finished");
    llm
}

fn actions(worker: &ScriptedWorker) -> Vec<String> {
    worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect()
}

fn result_text(req: &Recorded) -> String {
    req.last_results()[0]["content"].to_string()
}

#[test]
fn the_same_call_escalates_to_stuck_with_a_report() {
    // The session opened https://a.test/ itself: the model's first navigate there already repeats it.
    let nav = || tool("browser_navigate", json!({"url": "https://a.test/"}));
    let script = vec![
        nav(),
        nav(),
        nav(),
        nav(),
        text("Nothing to save."),
        text("I found the page https://a.test/ and a link Next."),
    ];
    let dir = TempDir::new("loop-same");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = static_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "find it"}));
    let s = wait_status(&c, &id, "error");
    assert!(s["error"].as_str().unwrap().starts_with("stuck: the model kept repeating `browser_navigate"), "{s}");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 6);
    llm.assert_well_formed();
    assert!(result_text(&reqs[1]).contains("same result as the one before"), "first repeat: a line");
    let second = result_text(&reqs[2]);
    assert!(
        second.contains("three times") && second.contains("[e1] link \\\"Next\\\""),
        "second: a note and the page: {second}"
    );
    assert!(result_text(&reqs[3]).contains("Not run"), "third: held back");
    // Stuck: one last chance, asking for the deliverable with the task restated.
    let deliver = &reqs[4];
    assert_eq!(deliver.body["tool_choice"], json!({"type": "any"}), "nothing to save: the finish");
    assert_eq!(deliver.tool_names(), ["finish_task"]);
    assert!(deliver.body["messages"].to_string().contains("Deliver now"), "{}", deliver.body["messages"]);
    // Three navigations and one snapshot reached the worker; the held-back calls did not.
    assert_eq!(actions(&worker), ["browser_navigate", "browser_navigate", "browser_navigate", "browser_snapshot"]);
    assert!(reqs[5].body.get("tools").is_none(), "the report is written without tools");
    let report = c.get(&format!("/sessions/{id}/report")).json()["report"].as_str().unwrap().to_string();
    assert!(report.contains("stuck:") && report.contains("a link Next"), "{report}");
}

/// Two observations that bring nothing new, and the next turn requires a call that acts; stuck,
/// the model is asked once for the deliverable; when it delivers, the session finishes instead of
/// ending `error`. The tool list never changes (a local server keeps its prompt cache): a
/// focused turn requires a tool call and refuses calls outside its set.
#[test]
fn a_stuck_session_that_delivers_when_asked_finishes() {
    let snap = || tool("browser_snapshot", json!({}));
    let mut script: Vec<Step> = (0..6).map(|_| snap()).collect();
    script.push(tools(
        None,
        &[
            ("save_file", json!({"filename": "answer.txt", "content": "Next"})),
            ("finish_task", json!({"summary": "The link is Next."})),
        ],
    ));
    let dir = TempDir::new("loop-deliver");
    let (d, llm, id, s) = answer_session(dir.path(), script);
    let c = d.client();
    assert_eq!(s["summary"], "The link is Next.");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 7);
    // After two snapshots that showed nothing new, the next turn requires a call that acts.
    assert!(reqs[3].body["messages"].to_string().contains("You already have this page"));
    assert_eq!(reqs[3].body["tool_choice"], json!({"type": "any"}), "a tool call is required");
    assert!(reqs[0].body.get("tool_choice").is_none());
    assert_eq!(reqs[3].tool_names(), reqs[0].tool_names(), "the same list: the prompt cache holds");
    assert!(result_text(&reqs[4]).contains("Not run. You already have this page"), "{}", result_text(&reqs[4]));
    // Held back twice, the session is stuck: the last chance asks for the deliverable.
    let deliver = reqs[6].body["messages"].to_string();
    assert!(deliver.contains(r#"Deliver now: call save_file with filename \"answer.txt\""#), "{deliver}");
    assert_eq!(reqs[6].body["tool_choice"], json!({"type": "any"}), "a call is required");
    assert_eq!(reqs[6].tool_names(), ["save_file"], "the last chance lists only the tool that delivers");
    let files = c.get(&format!("/sessions/{id}/files")).json();
    assert_eq!(files[0]["filename"], "answer.txt", "{files}");
}

/// Stuck, asked for the deliverable, and still no call that delivers; the model ends in words:
/// one call without tools asks for the task's file, and an answer the session has seen is saved.
#[test]
fn a_stuck_session_gives_its_answer_in_words() {
    let snap = || tool("browser_snapshot", json!({}));
    let mut script: Vec<Step> = (0..7).map(|_| snap()).collect();
    script.extend([text("I see a link."), text("The link is called Next."), text("Next")]);
    let dir = TempDir::new("loop-words");
    let (d, llm, id, s) = answer_session(dir.path(), script);
    let c = d.client();
    assert!(s["summary"].as_str().unwrap().starts_with("Saved answer.txt from the model's answer in words."), "{s}");
    let reqs = llm.requests();
    let asked = reqs.last().unwrap();
    assert!(asked.body.get("tools").is_none(), "asked without tools");
    assert!(asked.body["messages"].to_string().contains("What goes in answer.txt?"), "{}", asked.body["messages"]);
    let file = c.get(&format!("/sessions/{id}/files/answer.txt"));
    assert_eq!(file.text(), "Next");
}

/// An acting call repeated with the same arguments is a loop whatever it answers: a PDF printed
/// again gets a new file name each time, and is still the same call.
#[test]
fn the_same_acting_call_with_new_answers_is_a_loop_too() {
    let pdf = || tool("browser_save_as_pdf", json!({"filename": "late.pdf"}));
    let script = vec![pdf(), pdf(), pdf(), pdf(), pdf(), text("Saved."), text("Saved the page as late.pdf.")];
    let dir = TempDir::new("loop-acting");
    let (d, _llm) = llm_daemon(dir.path(), script, small);
    let n = std::sync::atomic::AtomicU32::new(0);
    let worker = ScriptedWorker::start(&d.worker_client(), "pdf-box", &["browser"], false, move |cmd| {
        match cmd["action"].as_str().unwrap() {
            "browser_save_as_pdf" => {
                let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                json!({"success": true, "data": {"filename": format!("late-{i}.pdf")}})
            }
            _ => json!({"success": true, "data": {"url": "https://a.test/", "snapshot": "Page: \"A\""}}),
        }
    });
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "save it"}));
    let s = wait_status(&c, &id, "error");
    assert!(s["error"].as_str().unwrap().contains("browser_save_as_pdf"), "{s}");
    let printed = actions(&worker).iter().filter(|a| *a == "browser_save_as_pdf").count();
    assert_eq!(printed, 1, "the same page is printed once: {:?}", actions(&worker));
}

#[test]
fn guard_done_before_prints_a_page_again_after_a_click() {
    let pdf = |name: &str| tool("browser_save_as_pdf", json!({"filename": name}));
    let click = tool("browser_click", json!({"selector": "ref=e1"}));
    let script =
        vec![pdf("r.pdf"), pdf("r-2.pdf"), click, pdf("r-3.pdf"), tool("finish_task", json!({"summary": "ok"}))];
    let dir = TempDir::new("loop-print");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = ScriptedWorker::start(&d.worker_client(), "pdf-box", &["browser"], false, move |cmd| {
        match cmd["action"].as_str().unwrap() {
            "browser_save_as_pdf" => json!({"success": true, "data": {"filename": cmd["params"]["filename"]}}),
            "browser_click" => json!({"success": true, "data": {"clicked": "a"}}),
            _ => json!({"success": true, "data": {"url": "https://a.test/", "snapshot": "[e1] link \"Next\""}}),
        }
    });
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "print the page"}));
    wait_status(&c, &id, "finished");
    let printed = actions(&worker).iter().filter(|a| *a == "browser_save_as_pdf").count();
    assert_eq!(printed, 2, "once, and again after a click that may have changed the page: {:?}", actions(&worker));
    let s = c.get(&format!("/sessions/{id}")).json();
    assert_eq!(s["guards_fired"]["done_before"], 1, "the second print only: {s}");
    let again = result_text(&llm.requests()[2]);
    assert!(again.contains("was saved as a PDF before") && again.contains("r.pdf"), "{again}");
}

#[test]
fn an_a_b_cycle_escalates_to_stuck() {
    let a = || tool("browser_navigate", json!({"url": "https://a.test/a"}));
    let b = || tool("browser_navigate", json!({"url": "https://a.test/b"}));
    let script =
        vec![a(), b(), a(), b(), a(), b(), a(), b(), text("Nothing to deliver."), text("Pages a and b look the same.")];
    let dir = TempDir::new("loop-cycle");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = static_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "compare"}));
    let s = wait_status(&c, &id, "error");
    assert!(s["error"].as_str().unwrap().contains("the cycle"), "{s}");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 10, "eight calls, the last chance, the report");
    assert!(result_text(&reqs[4]).contains("Your last 4 calls repeat the cycle"), "{}", result_text(&reqs[4]));
    assert!(result_text(&reqs[6]).contains("three times"), "{}", result_text(&reqs[6]));
    assert!(result_text(&reqs[7]).contains("Not run"), "the seventh is held back");
    let transcript = reqs[9].body["messages"].to_string();
    assert_eq!(transcript.matches("error: Not run").count(), 2, "so is the eighth: {transcript}");
    let navs = actions(&worker).iter().filter(|a| *a == "browser_navigate").count();
    assert_eq!(navs, 1 + 6, "the opening and six of the model's: the seventh and eighth were held back");
}

#[test]
fn finish_after_a_failed_call_in_the_same_reply_is_not_honoured() {
    let script = vec![
        tools(
            None,
            &[
                ("browser_click", json!({"selector": "#missing"})),
                ("finish_task", json!({"summary": "clicked it and saved report.pdf"})),
            ],
        ),
        tool("finish_task", json!({"summary": "could not click: the button is missing"})),
    ];
    let dir = TempDir::new("finish-honest");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = static_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "click"}));
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "could not click: the button is missing");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    let results: Vec<Value> = reqs[1].last_results();
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["is_error"], true);
    assert!(results[1]["content"][0]["text"].as_str().unwrap().contains("Not finished: browser_click"), "{results:?}");
}

#[test]
fn the_last_report_is_plain_text_in_json_action_mode_too() {
    let script = vec![
        crate::support::wire::openai_text(
            r#"{"action": "next_step", "tool": "save_note", "args": {"content": "price is 99"}}"#,
        ),
        crate::support::wire::openai_text("## Findings\nThe price is 99."),
    ];
    let dir = TempDir::new("json-last-word");
    let (d, llm) =
        wire_daemon(dir.path(), crate::support::wire::Wire::OpenAi, script, |c| c.api.tool_mode = "json".into());
    let _worker = static_worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://a.test/", "instruction": "price?", "options": {"max_turns": 1}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert!(s["summary"].as_str().unwrap().contains("The price is 99."), "{s}");
    assert_eq!(llm.requests().len(), 2, "no correction round for a reply that needs no action");
}

#[test]
fn guard_streak_hold_fires_on_one_tool_over_and_over_with_new_arguments() {
    let mut script: Vec<Step> =
        (0..10).map(|i| tool("save_note", json!({"content": format!("saved page-{i}.pdf")}))).collect();
    script.push(text("Nothing else."));
    script.push(text("Saved the page several times."));
    let dir = TempDir::new("loop-streak");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = static_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "save it"}));
    let s = wait_status(&c, &id, "error");
    assert!(
        s["error"].as_str().unwrap().starts_with("stuck: the model kept repeating save_note (8 calls in a row)"),
        "{s}"
    );
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 12, "ten calls, the last chance, the report");
    assert!(result_text(&reqs[5]).contains("5 times in a row") && result_text(&reqs[5]).contains("Your task: save it"));
    assert!(result_text(&reqs[9]).contains("Not run"));
    assert_eq!(c.get(&format!("/sessions/{id}/notes")).json().as_array().unwrap().len(), 8);
}

#[test]
fn guard_done_before_answers_a_url_downloaded_before() {
    let dl = || tool("browser_download", json!({"url": "https://a.test/guide.pdf"}));
    let script = vec![dl(), dl(), tool("finish_task", json!({"summary": "got the guide"}))];
    let dir = TempDir::new("loop-download");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = static_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "get the guide"}));
    wait_status(&c, &id, "finished");
    assert_eq!(actions(&worker), ["browser_navigate", "browser_download"], "the page opened first");
    assert!(result_text(&llm.requests()[2]).contains("already_downloaded"), "{}", result_text(&llm.requests()[2]));
}

/// A finish before anything the task asks to keep is saved is answered once with what to call
/// first (the answer was known; answer.txt was never written); the second finish is honoured.
#[test]
fn a_finish_before_the_deliverable_is_sent_back_once() {
    let script = vec![
        tool("finish_task", json!({"summary": "The link is Next."})),
        tools(
            None,
            &[
                ("save_file", json!({"filename": "answer.txt", "content": "Next"})),
                ("finish_task", json!({"summary": "Saved it."})),
            ],
        ),
    ];
    let dir = TempDir::new("finish-early");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = static_worker(&d);
    let c = d.client();
    let body =
        json!({"mode": "task", "target": "https://a.test/", "instruction": "save the link's name in answer.txt"});
    let id = create_session(&c, body);
    assert_eq!(wait_status(&c, &id, "finished")["summary"], "Saved it.");
    let first = result_text(&llm.requests()[1]);
    assert!(first.contains("Not finished") && first.contains("save_file"), "{first}");
    assert_eq!(c.get(&format!("/sessions/{id}/files")).json()[0]["filename"], "answer.txt");
}

/// A browser worker with two pages that link to each other, the home page also to About.
fn two_page_worker(d: &TestDaemon) -> ScriptedWorker {
    let current = std::sync::Mutex::new("https://a.test/".to_string());
    ScriptedWorker::start(&d.worker_client(), "pages-box", &["browser"], false, move |cmd| {
        let mut url = current.lock().unwrap();
        if let Some(to) = cmd["params"]["url"].as_str() {
            *url = to.to_string();
        }
        let snapshot = if url.ends_with("/contact") {
            "Page: \"Contact\" — https://a.test/contact (HTTP 200)\n[e3] link \"Home\" → https://a.test/".to_string()
        } else {
            format!(
                "Page: \"Home\" — {url} (HTTP 200)\n[e1] link \"Contact\" → https://a.test/contact\n\
                 [e2] link \"About us\" → https://a.test/about"
            )
        };
        json!({"success": true, "data": {"url": *url, "title": "t", "snapshot": snapshot}})
    })
}

#[test]
fn a_page_opened_again_names_the_pages_not_opened_yet() {
    let nav = |url: &str| tool("browser_navigate", json!({"url": url}));
    let script = vec![
        nav("https://a.test/contact"),
        nav("https://a.test/"),
        tool("browser_snapshot", json!({})),
        tool("finish_task", json!({"summary": "Not found."})),
    ];
    let body = json!({"mode": "task", "target": "https://a.test/", "instruction": "find the city"});
    let reqs = finished_task("loop-revisit", script, two_page_worker, body).requests();
    let note = "You opened this page before. If it does not have what you need, open one not opened yet: \
                \\\"About us\\\" https://a.test/about.";
    assert!(!result_text(&reqs[1]).contains("opened this page before"), "a new page: {}", result_text(&reqs[1]));
    assert!(result_text(&reqs[2]).contains(note), "back home: {}", result_text(&reqs[2]));
    assert!(!result_text(&reqs[3]).contains("opened this page before"), "the same page looked at again");
}

#[test]
fn a_side_download_is_not_the_answer_and_its_repeat_names_the_file_to_save() {
    let dl = || tool("browser_download", json!({"url": "https://a.test/guide.pdf"}));
    let save = tool("save_file", json!({"filename": "answer.txt", "content": "Next"}));
    let script = vec![
        dl(),
        dl(),
        tool("finish_task", json!({"summary": "Next"})),
        save,
        tool("finish_task", json!({"summary": "done"})),
    ];
    let body =
        json!({"mode": "task", "target": "https://a.test/", "instruction": "save the link's name in answer.txt"});
    let reqs = finished_task("loop-side-download", script, static_worker, body).requests();
    let again = result_text(&reqs[2]);
    assert!(again.contains("already_downloaded"), "the file it is: {again}");
    assert!(again.contains("call save_file with filename \\\"answer.txt\\\""), "the file to save: {again}");
    assert!(result_text(&reqs[3]).contains("Not finished"), "guide.pdf is not answer.txt: {}", result_text(&reqs[3]));
}

#[test]
fn a_refused_submit_gets_the_fill_the_task_names() {
    let page = "Page: \"Order\" — https://a.test/order (HTTP 200)\n\
                [e4] select \"Item\" name=item: Choose… (selected) | Mug=mug | Cap=cap\n\
                [e6] input number \"Quantity\" name=quantity value=\"1\"\n[e7] button \"Place order\"";
    let click = || tool("browser_click", json!({"selector": "ref=e7"}));
    let script = vec![click(), click(), click(), tool("finish_task", json!({"summary": "done"}))];
    let dir = TempDir::new("form-fit");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let filled = std::sync::atomic::AtomicBool::new(false);
    let worker = ScriptedWorker::start(&d.worker_client(), "form-box", &["browser"], false, move |cmd| {
        use std::sync::atomic::Ordering::SeqCst;
        match cmd["action"].as_str().unwrap() {
            "browser_click" if filled.load(SeqCst) => json!({"success": true, "data": {"url": "https://a.test/thanks",
                "title": "Thank you", "snapshot": "[e8] heading 1 \"Thank you\""}}),
            "browser_click" => json!({"success": false, "error": "not sent yet: the form's fields hold what the page \
                put there", "data": {"refused": "form_unset", "selector": "ref=e7", "fields": [
                    {"ref": "e4", "label": "Item", "kind": "select", "value": "Choose…", "options": ["Choose…", "Mug", "Cap"]},
                    {"ref": "e6", "label": "Quantity", "kind": "number", "value": "1"}]}}),
            "browser_fill_form" => {
                filled.store(true, SeqCst);
                json!({"success": true, "data": {"filled": 2}})
            }
            _ => json!({"success": true, "data": {"url": "https://a.test/order", "title": "Order", "snapshot": page}}),
        }
    });
    let c = d.client();
    let id =
        create_session(&c, json!({"mode": "task", "target": "https://a.test/order", "instruction": "Order 2 caps."}));
    wait_status(&c, &id, "finished");
    let reqs = llm.requests();
    let refused = result_text(&reqs[1]);
    let fill = r#"browser_fill_form {\"fields\":[{\"selector\":\"ref=e4\",\"value\":\"Cap\"},{\"selector\":\"ref=e6\",\"value\":\"2\"}]}, then click `ref=e7`."#;
    assert!(refused.contains(fill), "{refused}");
    // Clicked again at once, the form would go as the page filled it: held back, with the fill.
    let held = result_text(&reqs[2]);
    assert!(
        held.contains("Not clicked: the form still holds what the page put there") && held.contains(fill),
        "{held}"
    );
    // Clicked a third time: the task's values are filled in, then the form is sent.
    assert_eq!(actions(&worker), ["browser_navigate", "browser_click", "browser_fill_form", "browser_click"]);
    let fields = &worker.seen.lock().unwrap()[2]["params"]["fields"];
    assert_eq!(fields, &json!([{"selector": "ref=e4", "value": "Cap"}, {"selector": "ref=e6", "value": "2"}]));
    let sent = result_text(&reqs[3]);
    assert!(sent.contains("filled first with the task's values") && sent.contains("Thank you"), "{sent}");
    let steps = c.get(&format!("/sessions/{id}/steps")).json();
    let tools: Vec<&str> = steps.as_array().unwrap().iter().filter_map(|s| s["tool"].as_str()).collect();
    assert_eq!(
        tools,
        ["browser_navigate", "browser_click", "browser_click", "browser_fill_form", "browser_click", "finish_task"]
    );
}

#[test]
fn a_file_link_on_the_page_after_a_login_is_downloaded() {
    let script = vec![
        tool("perform_login", json!({})),
        tool("browser_click", json!({"selector": "ref=e9"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let account = "Page: \"My account\" — https://a.test/account (HTTP 200)\n\
                   [e9] link \"Invoice 0042 (PDF)\" → https://a.test/account/invoice-0042.pdf";
    let worker = move |d: &TestDaemon| {
        ScriptedWorker::start(&d.worker_client(), "login-box", &["browser"], false, move |cmd| {
            match cmd["action"].as_str().unwrap() {
                "browser_download" => json!({"success": true, "data": {"filename": "invoice-0042.pdf", "bytes": 9}}),
                "browser_click" => {
                    json!({"success": true, "data": {"url": "https://a.test/account", "snapshot": account}})
                }
                _ => {
                    json!({"success": true, "data": {"url": "https://a.test/login", "snapshot": "Page: \"Sign in\" — https://a.test/login (HTTP 200)"}})
                }
            }
        })
    };
    let dir = TempDir::new("login-file-link");
    let (d, _llm) = llm_daemon(dir.path(), script, small);
    let w = worker(&d);
    let c = d.client();
    let credentials = json!({"username": "u", "password": "p-secret", "login_url": "https://a.test/login"});
    let body = json!({"mode": "task", "target": "https://a.test/login", "instruction": "open the invoice",
                      "credentials": credentials});
    let id = create_session(&c, body);
    wait_status(&c, &id, "finished");
    let seen = w.seen.lock().unwrap().clone();
    let last = seen.last().unwrap();
    assert_eq!(last["action"], "browser_download", "{seen:?}");
    assert_eq!(last["params"]["url"], "https://a.test/account/invoice-0042.pdf");
}

#[test]
fn a_link_ref_of_the_page_before_opens_its_address() {
    let script = vec![
        tool("browser_navigate", json!({"url": "https://a.test/contact"})),
        // e2 ("About us") was on Home, not on Contact: the model means that link.
        tool("browser_click", json!({"selector": "ref=e2"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let dir = TempDir::new("loop-stale-link");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let w = two_page_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "find the city"}));
    wait_status(&c, &id, "finished");
    let seen = w.seen.lock().unwrap().clone();
    let last = seen.last().unwrap();
    assert_eq!((&last["action"], &last["params"]["url"]), (&json!("browser_navigate"), &json!("https://a.test/about")));
    let opened = result_text(&llm.requests()[2]);
    assert!(opened.contains("ref=e2 is a link of a page you saw before, not of this one"), "{opened}");
}

#[test]
fn the_same_file_read_a_third_time_asks_for_the_file() {
    let read = || tool("read_file", json!({"path": "/srv/notes.txt"}));
    let save = tool("save_file", json!({"filename": "found.txt", "content": "code 42"}));
    let script = vec![read(), read(), read(), save, tool("finish_task", json!({"summary": "done"}))];
    let worker = |d: &TestDaemon| {
        ScriptedWorker::start(
            &d.worker_client(),
            "box",
            &["shell"],
            false,
            |_| json!({"success": true, "data": {"content": "code 42\n", "path": "/srv/notes.txt", "size": 8}}),
        )
    };
    let body = json!({"mode": "task", "type": "shell", "target": "box",
                      "instruction": "Save the contents of /srv/notes.txt as found.txt."});
    let reqs = finished_task("loop-read-deliver", script, worker, body).requests();
    assert_eq!(reqs[3].tool_names(), vec!["save_file"], "only the deliverable is offered");
    let asked = reqs[3].body["messages"].to_string();
    assert!(asked.contains("You keep looking at the same result"), "{asked}");
    assert!(asked.contains(r#"Deliver now: call save_file with filename \"found.txt\""#), "{asked}");
    assert!(reqs[4].tool_names().len() > 1, "the turn after is open again");
}

#[test]
fn the_same_text_clicked_twice_asks_for_the_file() {
    let look = || tool("browser_click", json!({"selector": "ref=e2"}));
    let save = tool("save_file", json!({"filename": "answer.txt", "content": "$45"}));
    let script = vec![look(), look(), save, tool("finish_task", json!({"summary": "done"}))];
    let worker = |d: &TestDaemon| {
        ScriptedWorker::start(&d.worker_client(), "box", &["browser"], false, |cmd| {
            match cmd["action"].as_str().unwrap() {
                "browser_click" => json!({"success": false, "data": {"refused": "inert"}, "error": "`ref=e2` is a \
                    heading: a click on it does nothing. The text around it: \"Team $45 per month\"."}),
                _ => json!({"success": true, "data": {"url": "https://a.test/", "title": "Pricing",
                            "snapshot": "[e1] heading 1 \"Pricing\"\n[e2] heading 2 \"Team\""}}),
            }
        })
    };
    let body = json!({"mode": "task", "target": "https://a.test/",
                      "instruction": "What does the Team plan cost? Save just the price in answer.txt."});
    let reqs = finished_task("loop-look-deliver", script, worker, body).requests();
    assert_eq!(reqs[2].tool_names(), vec!["save_file"], "only the deliverable is offered");
    let asked = reqs[2].body["messages"].to_string();
    assert!(asked.contains(r#"Deliver now: call save_file with filename \"answer.txt\""#), "{asked}");
    assert!(!asked.contains("already failed the same way"), "no note that sends the model elsewhere: {asked}");
    assert!(reqs[3].tool_names().len() > 1, "the turn after is open again");
}

#[test]
fn a_tool_run_as_a_shell_program_is_called_as_the_tool() {
    let as_program = tool("run_command", json!({"command": "read_file /srv/notes.txt", "cwd": "/srv"}));
    let save = tool("run_command", json!({"command": "save_file found.txt \"code 42\"", "timeout_s": 10}));
    let script = vec![as_program, save, tool("finish_task", json!({"summary": "read"}))];
    let dir = TempDir::new("tool-as-program");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = ScriptedWorker::start(
        &d.worker_client(),
        "box",
        &["shell"],
        false,
        |_| json!({"success": true, "data": {"content": "code 42\n", "path": "/srv/notes.txt", "size": 8}}),
    );
    let c = d.client();
    let body = json!({"mode": "task", "type": "shell", "target": "box",
                      "instruction": "Save the contents of /srv/notes.txt as found.txt."});
    let id = create_session(&c, body);
    wait_status(&c, &id, "finished");
    let seen = worker.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["action"], "read_file");
    assert_eq!(seen[0]["params"]["path"], "/srv/notes.txt");
    let result = result_text(&llm.requests()[1]);
    assert!(result.contains("code 42") && result.contains("`read_file` is one of your tools"), "{result}");
    // `save_file NAME CONTENT` as a command: the file, with the rest of the line as its content.
    assert_eq!(c.get(&format!("/sessions/{id}/files/found.txt")).body, b"code 42");
}

#[test]
fn values_typed_from_nowhere_are_held_back_once() {
    let fill = || {
        tool(
            "browser_fill_form",
            json!({"fields": [{"selector": "ref=e2", "value": "John Doe"},
                                                     {"selector": "ref=e3", "value": "Where is your office?"}]}),
        )
    };
    let typed = tool("browser_type", json!({"selector": "ref=e2", "text": "Ada Lovelace"}));
    let script = vec![fill(), fill(), typed, tool("finish_task", json!({"summary": "sent"}))];
    let dir = TempDir::new("invented-values");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = ScriptedWorker::start(&d.worker_client(), "form-box", &["browser"], false, |cmd| match cmd["action"]
        .as_str()
        .unwrap()
    {
        "browser_navigate" => json!({"success": true, "data": {"url": "https://a.test/contact", "title": "Contact",
                "snapshot": "[e1] link \"About us\" → https://a.test/about\n[e2] input text \"Name\"\n[e3] textarea \"Message\""}}),
        _ => json!({"success": true, "data": {"ok": true}}),
    });
    let c = d.client();
    let task = "Ask the company where its office is; sign as Ada Lovelace.";
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/contact", "instruction": task}));
    wait_status(&c, &id, "finished");
    let held = result_text(&llm.requests()[1]);
    assert!(held.contains("Not typed: `John`, `Doe` is in nothing this session has seen"), "{held}");
    assert!(held.contains("\\\"About us\\\" https://a.test/about"), "the pages to look at: {held}");
    // Insisted on at once: made. A name the task gives: typed at the first call.
    assert_eq!(actions(&worker), ["browser_navigate", "browser_fill_form", "browser_type"]);
}

#[test]
fn guard_streak_hold_is_quiet_on_a_shell_session_of_many_commands() {
    let mut script: Vec<Step> =
        (0..10).map(|i| tool("run_command", json!({"command": format!("wc -l /srv/part-{i}.txt")}))).collect();
    script.push(tool("finish_task", json!({"summary": "counted"})));
    let dir = TempDir::new("shell-streak");
    let (d, _llm) = llm_daemon(dir.path(), script, small);
    let worker = ScriptedWorker::start(
        &d.worker_client(),
        "box",
        &["shell"],
        false,
        |cmd| json!({"success": true, "data": {"exit_code": 0, "stdout": format!("{}\n", cmd["params"]["command"])}}),
    );
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "type": "shell", "target": "box", "instruction": "count"}));
    let s = wait_status(&c, &id, "finished");
    assert_eq!(actions(&worker).len(), 10, "no command held back for being one more of the same tool");
    assert_eq!(s["guards_fired"]["streak_hold"], Value::Null, "{s}");
    assert_eq!(s["guards_fired"]["loop_note"], Value::Null, "ten different commands are no loop: {s}");
}

#[test]
fn a_click_goes_to_the_link_the_reply_names() {
    let said = tools(Some("I will click the 'About us' link."), &[("browser_click", json!({"selector": "ref=e6"}))]);
    let script = vec![said, tool("finish_task", json!({"summary": "opened"}))];
    let dir = TempDir::new("click-as-said");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let worker = ScriptedWorker::start(&d.worker_client(), "box", &["browser"], false, |cmd| {
        json!({"success": true, "data": {"url": "https://a.test/", "title": "Home", "clicked": cmd["params"]["selector"],
            "snapshot": "[e5] link \"About us\" → https://a.test/about\n[e6] link \"Contact\" → https://a.test/contact"}})
    });
    let c = d.client();
    let id =
        create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "open the about page"}));
    wait_status(&c, &id, "finished");
    let seen = worker.seen.lock().unwrap().clone();
    assert_eq!(seen[1]["action"], "browser_click");
    assert_eq!(seen[1]["params"]["selector"], "ref=e5", "the link the words name");
    let result = result_text(&llm.requests()[1]);
    assert!(result.contains("`ref=e6` is link"), "{result}");
}

#[test]
fn a_guess_held_back_is_held_again_after_wandering_off() {
    let guess = || tool("save_file", json!({"filename": "answer.txt", "content": "New York"}));
    let nav = tool("browser_navigate", json!({"url": "https://a.test/next"}));
    let finish = || tool("finish_task", json!({"summary": "no city found"}));
    let script = vec![guess(), nav, guess(), finish(), finish()];
    let dir = TempDir::new("guess-again");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = static_worker(&d);
    let c = d.client();
    let task = json!({"mode": "task", "target": "https://a.test/", "instruction": "Save the city in answer.txt."});
    let id = create_session(&c, task);
    wait_status(&c, &id, "finished");
    let reqs = llm.requests();
    // The hold quotes the guess; that quote does not make it a word the session has seen.
    for i in [1, 3] {
        assert!(result_text(&reqs[i]).contains("Not saved yet: `New`, `York`"), "call {i}: {}", result_text(&reqs[i]));
    }
    assert_eq!(c.get(&format!("/sessions/{id}/files/answer.txt")).status, 404, "the guess was never saved");
}

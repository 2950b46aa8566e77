//! Loops that escalate and endings that keep what was found, through the real daemon and the
//! real agent on a scripted model and a scripted browser worker: the same call repeated, an
//! A/B cycle, both ending `error` "stuck: …" with a report the model still writes; and a
//! `finish_task` in a reply whose earlier call failed, which is not honoured.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};

/// A browser worker whose pages never change.
pub(crate) fn static_worker(d: &TestDaemon) -> ScriptedWorker {
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
pub(crate) fn finished_task(
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

pub(crate) fn actions(worker: &ScriptedWorker) -> Vec<String> {
    worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect()
}

pub(crate) fn result_text(req: &Recorded) -> String {
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
    assert_eq!(s["ended_by"], "loop", "the record says the loop guard ended it, as a code");
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
    // Stuck: one last chance, offering what delivers and the finish with the task restated.
    let deliver = &reqs[4];
    assert_eq!(deliver.body["tool_choice"], json!({"type": "any"}), "a call required, none named");
    let offered = ["browser_download", "browser_scrape_table", "browser_save_as_pdf", "save_file", "finish_task"];
    assert_eq!(deliver.tool_names(), offered);
    let note = deliver.body["messages"].to_string();
    assert!(note.contains("Deliver now") && note.contains("Your task: find it"), "{note}");
    // Three navigations and one snapshot reached the worker; the held-back calls did not.
    assert_eq!(actions(&worker), ["browser_navigate", "browser_navigate", "browser_navigate", "browser_snapshot"]);
    assert!(reqs[5].body.get("tools").is_none(), "the report is written without tools");
    let report = c.get(&format!("/sessions/{id}/report")).json()["report"].as_str().unwrap().to_string();
    assert!(report.contains("stuck:") && report.contains("a link Next"), "{report}");
}

/// Stuck, the model is asked once for the deliverable; when it delivers, the session finishes
/// instead of ending `error`. The tool list never changes until then (a local server keeps its
/// prompt cache); the last chance requires a call and lists the tools that deliver.
#[test]
fn a_stuck_session_that_delivers_when_asked_finishes() {
    let snap = || tool("browser_snapshot", json!({}));
    let mut script: Vec<Step> = (0..5).map(|_| snap()).collect();
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
    assert_eq!(reqs.len(), 6);
    assert!(reqs[..5].iter().all(|r| r.body.get("tool_choice").is_none()), "open turns");
    assert!(reqs[..5].iter().all(|r| r.tool_names() == reqs[0].tool_names()), "the same list: the prompt cache holds");
    assert!(result_text(&reqs[4]).contains("Not run: this would repeat"), "{}", result_text(&reqs[4]));
    // Held back twice, the session is stuck: the last chance asks for the deliverable.
    let deliver = reqs[5].body["messages"].to_string();
    assert!(deliver.contains("Deliver now") && deliver.contains("save the link's name in answer.txt"), "{deliver}");
    assert_eq!(reqs[5].body["tool_choice"], json!({"type": "any"}), "a call is required");
    let offered = ["browser_download", "browser_scrape_table", "browser_save_as_pdf", "save_file", "finish_task"];
    assert_eq!(reqs[5].tool_names(), offered, "the last chance lists the tools that deliver");
    let files = c.get(&format!("/sessions/{id}/files")).json();
    assert_eq!(files[0]["filename"], "answer.txt", "{files}");
}

/// Stuck, asked for the deliverable, and still no call that delivers: the session ends stuck, one
/// call without tools asks for the task's file, and an answer the session has seen is saved.
#[test]
fn a_stuck_session_gives_its_answer_in_words() {
    let snap = || tool("browser_snapshot", json!({}));
    let mut script: Vec<Step> = (0..7).map(|_| snap()).collect();
    script.extend([text("Next"), text("The link is called Next.")]);
    let dir = TempDir::new("loop-words");
    let (d, llm, id, s) = answer_session(dir.path(), script);
    let c = d.client();
    assert!(s["summary"].as_str().unwrap().starts_with("Saved answer.txt from the model's answer in words."), "{s}");
    let reqs = llm.requests();
    let asked = reqs.iter().find(|r| r.body["messages"].to_string().contains("What goes in answer.txt?"));
    assert!(asked.is_some_and(|r| r.body.get("tools").is_none()), "asked without tools: {reqs:?}");
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

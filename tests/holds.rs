//! What the small profile's holds and redirects do to a whole session, through the real daemon
//! and agent on a scripted model and a scripted browser or shell worker: a finish before the
//! deliverable, a side download, a refused submit, a click on a link to a file, a long streak of
//! commands, a click the reply's words name.

use crate::loops::{actions, finished_task, result_text, static_worker};
use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};

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

#[test]
fn a_side_download_is_not_the_answer_and_its_repeat_is_answered_with_its_file() {
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
    assert!(again.contains("repeating it brings nothing new"), "said so: {again}");
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

/// A click on the account page's invoice link (a PDF) is the download the user means: a viewer
/// would show the model an empty page.
#[test]
fn a_file_link_on_the_page_after_a_login_is_downloaded() {
    let script = vec![
        tool("perform_login", json!({})),
        tool("browser_click", json!({"selector": "ref=e9"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let account = "Page: \"My account\" — https://a.test/account (HTTP 200)\n\
                   [e9] link \"Invoice 0042 (PDF)\" → https://a.test/account/invoice-0042.pdf";
    let dir = TempDir::new("login-file-link");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let w = ScriptedWorker::start(&d.worker_client(), "login-box", &["browser"], false, move |cmd| match cmd["action"]
        .as_str()
        .unwrap()
    {
        "browser_download" => json!({"success": true, "data": {"filename": "invoice-0042.pdf", "bytes": 9}}),
        "browser_click" => json!({"success": true, "data": {"url": "https://a.test/account", "snapshot": account}}),
        _ => json!({"success": true, "data": {"url": "https://a.test/login",
                                                   "snapshot": "Page: \"Sign in\" — https://a.test/login (HTTP 200)"}}),
    });
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
    let said = result_text(&llm.requests()[2]);
    assert!(said.contains("ref=e9 links to a file: it was downloaded"), "{said}");
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
    assert!(result.contains("do not name `ref=e6`") && result.contains("ref=e6: link"), "{result}");
}

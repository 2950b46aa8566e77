//! What a person types while taking over reaches the worker only: the model (the hand-back,
//! the page after it, its own later looks) and the record (log, steps, conversation, report)
//! see neither it nor any vault secret, in any of the forms the scrubber hunts, nor what a
//! page made of it (a card number in groups, a code echoed with dashes). On a shell, a
//! person's commands are typing too.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const PASSWORD: &str = "hunter2!Vault";
const CODE: &str = "493817";

/// Every text the session left on disk (screenshots aside).
fn written(dir: &std::path::Path, id: &str) -> String {
    all_files(&dir.join(id))
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().contains("screenshots"))
        .map(|(p, bytes)| format!("{}:\n{}\n", p.display(), String::from_utf8_lossy(&bytes)))
        .collect()
}

/// The forms the review found a secret in: as typed, URL-encoded, form-encoded, base64.
fn assert_absent(secret: &str, text: &str, what: &str) {
    use base64::Engine;
    let encoded = [
        secret.to_string(),
        secret.replace('!', "%21"),
        base64::engine::general_purpose::STANDARD.encode(secret).trim_end_matches('=').to_string(),
    ];
    for form in encoded {
        assert!(!text.contains(&form), "{what} holds {form:?}:\n{text}");
    }
}

/// A browser whose page holds what was typed into it, as a real one does: the code field's
/// value, and the address after a navigation.
fn page_worker(d: &TestDaemon) -> ScriptedWorker {
    let page = Arc::new(Mutex::new(("https://x.test/".to_string(), String::new())));
    ScriptedWorker::start(&d.worker_client(), "pagebox", &["browser"], true, move |cmd| {
        let mut page = page.lock().unwrap();
        let p = &cmd["params"];
        match cmd["action"].as_str().unwrap_or("") {
            "browser_navigate" => page.0 = p["url"].as_str().unwrap_or("").to_string(),
            "browser_type" => page.1 = p["text"].as_str().unwrap_or("").to_string(),
            "browser_fill_form" => {
                let body = p["fields"][0]["value"].as_str().unwrap_or("").replace('!', "%21");
                return json!({"success": true, "data": {"filled": 1, "would_send": format!("password={body}")}});
            }
            _ => {}
        }
        let snapshot = format!("heading \"Verify\" [ref=e1]\ntextbox \"Code\" value=\"{}\" [ref=e2]", page.1);
        json!({"success": true, "data": {"url": page.0, "snapshot": snapshot}})
    })
}

#[test]
fn a_person_s_typing_and_the_vault_s_secrets_reach_the_worker_only() {
    let dir = TempDir::new("takeover-secrets");
    let script = vec![
        tool("request_takeover", json!({"reason": "a one-time code"})),
        tool("browser_snapshot", json!({})),
        tool("finish_task", json!({"summary": "verified"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = page_worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "sign in and verify",
               "credentials": {"username": "ann", "password": PASSWORD}}),
    );
    wait_status(&c, &id, "paused");
    let act = |tool: &str, input: Value| {
        let r = c.post(&format!("/sessions/{id}/act"), &json!({"tool": tool, "input": input}));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    // The vault's password in a URL and in a form; a one-time code typed into a field.
    act("browser_navigate", json!({"url": format!("https://x.test/login?pw={}", PASSWORD.replace('!', "%21"))}));
    act("browser_fill_form", json!({"fields": [{"selector": "#password", "value": PASSWORD}]}));
    act("browser_type", json!({"selector": "#code", "text": CODE}));
    let seen = worker.seen.lock().unwrap().clone();
    assert!(seen.iter().any(|c| c["params"]["text"] == CODE), "the worker gets what the person typed");
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    wait_status(&c, &id, "finished");
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    // The hand-back says what the person did, without what they typed.
    let handback = requests[1].last_results().iter().map(Value::to_string).collect::<String>();
    for needle in ["browser_navigate", "browser_type", "6 characters typed", "textbox"] {
        assert!(handback.contains(needle), "{needle} missing from {handback}");
    }
    for r in &requests[1..] {
        assert_absent(PASSWORD, &r.body.to_string(), "a model request");
        assert_absent(CODE, &r.body.to_string(), "a model request");
    }
    // The model's own look at the page after the hand-back: the field's value is scrubbed too.
    assert!(requests[2].last_result_data().contains("textbox \"Code\""), "{}", requests[2].last_result_data());
    let record = written(dir.path(), &id) + &c.get(&format!("/sessions/{id}/conversation")).text();
    assert_absent(PASSWORD, &record, "the record");
    assert_absent(CODE, &record, "the record");
    llm.assert_well_formed();
}

/// On a shell, what a person runs is typing too: the model and the record get its length, and
/// output that echoes it is scrubbed; the worker gets the command.
#[test]
fn a_person_s_commands_on_a_shell_reach_the_worker_only() {
    let dir = TempDir::new("takeover-shell");
    let script = vec![
        tool("request_takeover", json!({"reason": "needs the deploy token"})),
        tool("finish_task", json!({"summary": "deployed"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = ScriptedWorker::start(&d.worker_client(), "shellbox", &["shell"], false, |cmd| {
        let echoed = format!("+ {}\ndeployed", cmd["params"]["command"].as_str().unwrap_or(""));
        json!({"success": true, "data": {"exit_code": 0, "stdout": echoed, "stderr": ""}})
    });
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "type": "shell", "target": "shellbox", "instruction": "deploy",
               "credentials": {"username": "ann", "password": PASSWORD}}),
    );
    wait_status(&c, &id, "paused");
    let command = format!("DEPLOY_TOKEN=tok-{CODE}-xyz ./deploy --password '{PASSWORD}'");
    let r = c.post(&format!("/sessions/{id}/act"), &json!({"tool": "run_command", "input": {"command": command}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(worker.seen.lock().unwrap().iter().any(|c| c["params"]["command"] == command.as_str()));
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    wait_status(&c, &id, "finished");
    let handback = llm.requests()[1].last_results().iter().map(Value::to_string).collect::<String>();
    let typed = format!("{} characters typed", command.chars().count());
    assert!(handback.contains("run_command") && handback.contains(&typed), "{handback}");
    assert!(handback.contains("deployed"), "the command's output still reaches the model: {handback}");
    let record = written(dir.path(), &id) + &c.get(&format!("/sessions/{id}/conversation")).text();
    for text in [&llm.requests()[1].body.to_string(), &record] {
        assert_absent(PASSWORD, text, "the model or the record");
        assert_absent(&format!("tok-{CODE}-xyz"), text, "the model or the record");
    }
}

/// Issue 65: a page reformats what a person typed (`4111 1111 1111 1111` for
/// `4111111111111111`, `4-9-3-8-1-7` for `493817`), and the reformatted value reached the model.
#[test]
fn what_a_page_makes_of_a_person_s_typing_reaches_the_model_scrubbed_too() {
    const CARD: &str = "4111111111111111";
    let dir = TempDir::new("takeover-reformatted");
    let script = vec![
        tool("request_takeover", json!({"reason": "card details"})),
        tool("browser_snapshot", json!({})),
        tool("finish_task", json!({"summary": "paid"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    // The card field masks its value in groups of four; the page echoes the code spaced out.
    let typed = Arc::new(Mutex::new(Vec::<String>::new()));
    let _worker = ScriptedWorker::start(&d.worker_client(), "paybox", &["browser"], false, move |cmd| {
        let mut typed = typed.lock().unwrap();
        if cmd["action"] == "browser_type" {
            typed.push(cmd["params"]["text"].as_str().unwrap_or("").to_string());
        }
        let grouped = |t: &String| {
            t.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(" ")
        };
        let dashed = |t: &String| t.chars().map(String::from).collect::<Vec<_>>().join("-");
        let lines: Vec<String> =
            typed.iter().map(|t| format!("textbox value=\"{}\" note \"sent {}\"", grouped(t), dashed(t))).collect();
        json!({"success": true, "data": {"url": "https://pay.test/", "snapshot": lines.join("\n")}})
    });
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://pay.test", "instruction": "pay"}));
    wait_status(&c, &id, "paused");
    for (selector, text) in [("#card", CARD), ("#code", CODE)] {
        let r = c.post(
            &format!("/sessions/{id}/act"),
            &json!({"tool": "browser_type", "input": {"selector": selector, "text": text}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(c.post(&format!("/sessions/{id}/resume"), &json!({})).status, 202);
    wait_status(&c, &id, "finished");
    let requests = llm.requests();
    assert!(requests[2].last_result_data().contains("textbox value="), "{}", requests[2].last_result_data());
    let record = written(dir.path(), &id) + &c.get(&format!("/sessions/{id}/conversation")).text();
    for text in requests[1..].iter().map(|r| r.body.to_string()).chain([record]) {
        for shown in ["4111 1111 1111 1111", "4-1-1-1-1-1-1-1", "4-9-3-8-1-7", "4938 17", CARD, CODE] {
            assert!(!text.contains(shown), "{shown:?} in {text}");
        }
    }
}

//! What a small model is told, as the scripted model receives it: short prompts with one first
//! action, selector help with real examples (never the literal `tag:has-text("text")`), and no
//! demand for a confirmation the session does not need.

use crate::support::llm::*;
use crate::support::*;
use serde_json::json;

#[test]
fn prompts_are_short_concrete_and_ask_only_for_needed_confirmations() {
    let script = vec![tool("finish_task", json!({"summary": "a"})), tool("finish_task", json!({"summary": "b"}))];
    let dir = TempDir::new("prompts");
    let (d, llm) = llm_daemon(dir.path(), script, small);
    let _worker = ScriptedWorker::start(
        &d.worker_client(),
        "p-box",
        &["browser"],
        false,
        |_| json!({"success": true, "data": {}}),
    );
    let c = d.client();
    for auto in [false, true] {
        let body = json!({"mode": "task", "target": "https://shop.test/", "instruction": "buy socks",
                          "options": {"auto_confirm": auto}});
        let id = create_session(&c, body);
        wait_status(&c, &id, "finished");
    }
    let reqs = llm.requests();
    let system = |i: usize| reqs[i].body["system"][0]["text"].as_str().unwrap().to_string();
    let (asked, auto) = (system(0), system(1));
    assert!(asked.contains("request_confirmation") && !auto.contains("request_confirmation"), "{auto}");
    assert!(asked.len() < 2000, "short: {} characters", asked.len());
    assert!(asked.contains("\"ref=e12\"") && !asked.contains("tag:has-text"), "{asked}");
    assert_eq!(asked.matches("finish_task").count(), 1, "finishing is said once: {asked}");
    // The session opened the page itself: the opening carries it, and no navigate is asked for.
    let opening = &reqs[0].body["messages"][0]["content"];
    assert!(opening[0]["text"].as_str().unwrap().ends_with("You have at most 200 turns."), "{opening}");
    assert_eq!(opening[1]["text"], "The page is open already:", "{opening}");
    assert!(asked.contains("already open") && !asked.contains("First call browser_navigate"), "{asked}");
    // The task is just above: nothing is recited yet.
    let last = opening.as_array().unwrap().last().unwrap()["text"].as_str().unwrap();
    assert!(!last.contains("(Reminder)"), "{last}");
    let click =
        reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "browser_click").unwrap().clone();
    assert!(click.to_string().contains("ref=e12") && !click.to_string().contains("tag:has-text"), "{click}");
}

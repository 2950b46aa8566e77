//! The agent and its model endpoint, end to end through the real daemon and a scripted
//! Anthropic server: overloaded and failing calls retried, a 401 ending the session at once
//! with the API's words, an empty reply nudged, unreachable and slow endpoints bounded, the turn limit's report.

use crate::agent::{assert_conversation_complete, browser_worker, conversation, world};
use crate::support::llm::*;
use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn overloaded_then_success_is_retried() {
    let script = vec![
        Step::error(529, "overloaded_error", "Overloaded").with_header("retry-after", "0.2"),
        Step::error(500, "api_error", "Internal error"),
        tool("finish_task", json!({"summary": "done after retries"})),
    ];
    let w = world("retry", script, |_| {});
    let _worker = browser_worker(&w.d, "r");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let s = wait_status(&w.d.client(), &id, "finished");
    assert_eq!(s["summary"], "done after retries");
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].body, reqs[2].body, "the same request is retried");
    assert_eq!(reqs[1].header("x-stainless-retry-count"), Some("1"));
}

#[test]
fn unauthorized_fails_fast_with_the_api_message() {
    let w = world("401", vec![Step::error(401, "authentication_error", "invalid x-api-key")], |_| {});
    let _worker = browser_worker(&w.d, "u");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let t = Instant::now();
    let s = wait_status(&w.d.client(), &id, "error");
    assert!(t.elapsed() < Duration::from_secs(3));
    assert_eq!(s["error"], "Anthropic API 401 authentication_error: invalid x-api-key");
    assert_eq!(w.llm.requests().len(), 1, "no retry on 401");
    let log = w.d.client().get(&format!("/sessions/{id}/log")).json();
    assert!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "error" && e["text"].as_str().unwrap().contains("invalid x-api-key"))
    );
}

#[test]
fn an_empty_reply_is_nudged_without_breaking_the_conversation() {
    let script = vec![
        tool("save_note", json!({"content": "x"})),
        empty(),
        tool("finish_task", json!({"summary": "ok after nudge"})),
    ];
    let w = world("emptyreply", script, |_| {});
    let _worker = browser_worker(&w.d, "e");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let s = wait_status(&w.d.client(), &id, "finished");
    assert_eq!(s["summary"], "ok after nudge");
    w.llm.assert_well_formed();
    let last = w.llm.requests()[2].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("finish_task"), "the nudge rides on the tool results: {last}");
    assert_conversation_complete(&conversation(&w, &id));
}

#[test]
fn connection_errors_are_retried_and_every_call_has_a_timeout() {
    // Nothing listens on port 1 (and no test can bind it): each attempt is a connection error,
    // retried, then the session fails.
    let w = world("connerr", vec![], move |c| {
        c.api.base_url = "http://127.0.0.1:1".to_string();
        c.api.max_retries = 1;
    });
    let _worker = browser_worker(&w.d, "ce");
    let id = create_session(&w.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let s = wait_status(&w.d.client(), &id, "error");
    assert!(
        s["error"].as_str().unwrap().contains("unreachable")
            && s["error"].as_str().unwrap().contains("after 1 retries"),
        "{s}"
    );

    // A model slower than api.timeout_s: the call is abandoned at the timeout, not waited out.
    let slow = world("timeout", vec![text("late").delayed(Duration::from_secs(20))], |c| {
        c.api.timeout_s = 1;
        c.api.max_retries = 0;
    });
    let _worker2 = browser_worker(&slow.d, "to");
    let t = Instant::now();
    let id = create_session(&slow.d.client(), json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    let s = wait_status(&slow.d.client(), &id, "error");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert!(s["error"].as_str().unwrap().contains("timed out"), "{s}");
}

#[test]
fn max_turns_finishes_with_a_report_that_says_so() {
    let script = vec![
        tool("save_note", json!({"content": "first"})),
        tool("save_note", json!({"content": "second"})),
        text("## Findings\n\nTwo notes were saved: first and second."),
    ];
    let w = world("maxturns", script, |_| {});
    let _worker = browser_worker(&w.d, "m");
    let id = create_session(
        &w.d.client(),
        json!({"mode": "task", "target": "https://x.test", "instruction": "x", "options": {"max_turns": 2}}),
    );
    let s = wait_status(&w.d.client(), &id, "finished");
    assert_eq!(s["turn"], 2);
    assert!(s["summary"].as_str().unwrap().contains("limit of 2 turns"));
    assert!(s["summary"].as_str().unwrap().contains("first and second"), "{s}");
    // One last call, without tools, wrote the report from the transcript.
    let reqs = w.llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].body.get("tools").is_none(), "{}", reqs[2].body);
    let asked = reqs[2].body["messages"].to_string();
    assert!(asked.contains("turn limit") && asked.contains("call save_note"), "{asked}");
    let report = w.d.client().get(&format!("/sessions/{id}/report")).json()["report"].as_str().unwrap().to_string();
    assert!(report.contains("limit of 2 turns") && report.contains("## Findings"), "{report}");
    assert!(report.contains("- second"), "the notes are kept too: {report}");
    assert_conversation_complete(&conversation(&w, &id));
}

/// `DELETE …?report=false` stops without the model's report (its call would cost a model
/// call the caller does not want); the report still says the session was stopped.
#[test]
fn a_stop_without_a_report_makes_no_model_call() {
    let script = vec![
        tool("request_confirmation", json!({"action": "submit", "description": "Submit the form"})),
        text("This reply must never be asked for."),
    ];
    let w = world("stop-no-report", script, |_| {});
    let c = w.d.client();
    let _worker = browser_worker(&w.d, "s");
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "x"}));
    wait_until(Duration::from_secs(10), "pending", || {
        (c.get(&format!("/sessions/{id}/confirmation")).json()["pending"] == true).then_some(())
    });
    let bad = c.delete(&format!("/sessions/{id}?report=maybe"));
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert_eq!(c.delete(&format!("/sessions/{id}?report=false")).status, 200);
    wait_status(&c, &id, "stopped");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.llm.requests().len(), 1, "no call after the stop");
    let report = c.get(&format!("/sessions/{id}/report")).json()["report"].as_str().unwrap_or_default().to_string();
    assert!(report.contains("Stopped by request."), "{report}");
}

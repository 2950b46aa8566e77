//! A person takes over: pause during a model call, no call while paused, the person's acts
//! reaching the worker (and the refused ones), the model told on resume, `request_takeover`
//! with its notification, a pause nobody answers, a stop while paused. The real daemon and
//! agent, a scripted model, a seed-shaped scripted worker.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn seed_worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(&d.worker_client(), "seedbox", &["browser"], true, |cmd| match cmd["action"].as_str() {
        Some("browser_snapshot") => {
            json!({"success": true, "data": {"url": "https://x.test/", "snapshot": "heading \"Signed in\" [ref=e1]"}})
        }
        // As the real worker: typed text is never echoed (it may be a password).
        Some("browser_type") => json!({"success": true, "data": {"typed": true}}),
        _ => json!({"success": true, "data": {"ok": true, "action": cmd["action"], "params": cmd["params"]}}),
    })
}

fn all_text(body: &Value) -> String {
    body["messages"].to_string()
}

/// A sign-in task whose model asks a person to take over (`reason`), then finishes; its
/// notifications go to a webhook. The session once paused, and what keeps it alive (bind every
/// field: one left to `..` is dropped at once, the model's server or the worker with it).
struct Asked {
    d: TestDaemon,
    llm: ScriptedLlm,
    hook: Receiver,
    id: String,
    paused: Value,
    _worker: ScriptedWorker,
    _dir: TempDir,
}

fn asked_for_a_person(name: &str, reason: &str) -> Asked {
    let dir = TempDir::new(name);
    let hook = Receiver::start();
    let script =
        vec![tool("request_takeover", json!({"reason": reason})), tool("finish_task", json!({"summary": "signed in"}))];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.notifications.allow_private = true);
    let worker = seed_worker(&d);
    let id = create_session(
        &d.client(),
        json!({"mode": "task", "target": "https://x.test", "instruction": "sign in",
               "notifications": {"webhook": {"url": format!("{}/hook", hook.url)}}}),
    );
    let paused = wait_status(&d.client(), &id, "paused");
    Asked { d, llm, hook, id, paused, _worker: worker, _dir: dir }
}

#[test]
fn a_person_pauses_acts_and_hands_back() {
    let dir = TempDir::new("takeover");
    let script = vec![
        tool("browser_click", json!({"selector": "ref=e1"})).delayed(Duration::from_millis(1500)),
        tool("finish_task", json!({"summary": "done after the person's help"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = seed_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "sign in"}));
    wait_until(Duration::from_secs(10), "the first model call", || (llm.requests().len() == 1).then_some(()));
    // Not paused yet: an act is refused with 409, whatever the tool.
    let act = |body: Value| c.post(&format!("/sessions/{id}/act"), &body);
    assert_error(&act(json!({"tool": "browser_click", "input": {"selector": "#a"}})), 409, "conflict");
    let r = c.post(&format!("/sessions/{id}/pause"), &json!({}));
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["pause_requested"], true);
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["pause_requested"], true);
    // The call in flight and its click finish; then the session waits, calling no model.
    let paused = wait_status(&c, &id, "paused");
    assert!(paused.get("pause_requested").is_none(), "{paused}");
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(llm.requests().len(), 1, "no model call while paused");
    assert_eq!(c.get(&format!("/sessions/{id}")).json()["status"], "paused");
    // Refused: a local tool, another type's tool, bad input, unknown fields.
    assert_error(&act(json!({"tool": "save_file", "input": {"filename": "a", "content": "b"}})), 400, "bad_request");
    assert_error(&act(json!({"tool": "run_command", "input": {"command": "id"}})), 400, "bad_request");
    assert_error(&act(json!({"tool": "browser_type", "input": {"text": 5}})), 400, "bad_request");
    assert_error(&act(json!({"tool": "browser_click", "input": {"x": "left"}})), 400, "bad_request");
    assert_error(&act(json!({"tool": "browser_click", "input": {}, "by": "me"})), 400, "bad_request");
    // The person's click at image coordinates and typing reach the worker as commands.
    let r = act(json!({"tool": "browser_click", "input": {"x": 120, "y": 48}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!((answer["by"].as_str(), answer["is_error"].as_bool()), (Some("human"), Some(false)));
    assert!(answer["result"].as_str().unwrap().contains("browser_click"), "{answer}");
    let r = act(json!({"tool": "browser_type", "input": {"selector": "#code", "text": "424242"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = worker.seen.lock().unwrap().clone();
    let click = seen.iter().find(|c| c["action"] == "browser_click" && c["params"]["x"] == 120).expect("the click");
    assert_eq!(click["params"]["y"], 48);
    assert!(seen.iter().any(|c| c["action"] == "browser_type" && c["params"]["text"] == "424242"));
    assert_eq!(llm.requests().len(), 1, "acts call no model");
    // Steps and the log say who acted.
    let steps = c.get(&format!("/sessions/{id}/steps")).json();
    let human: Vec<&Value> = steps.as_array().unwrap().iter().filter(|s| s["by"] == "human").collect();
    assert_eq!(human.len(), 2, "{steps}");
    assert_eq!(human[0]["tool"], "browser_click");
    let log = std::fs::read_to_string(dir.path().join(&id).join("log.jsonl")).unwrap();
    assert!(log.lines().filter(|l| l.contains("\"by\":\"human\"")).count() >= 4, "{log}");
    // Resume: the next request begins with what the person did, the note, the page now.
    let r = c.post(&format!("/sessions/{id}/resume"), &json!({"note": "solved the captcha"}));
    assert_eq!(r.status, 202, "{}", r.text());
    let done = wait_status(&c, &id, "finished");
    assert_eq!(done["summary"], "done after the person's help");
    let second = all_text(&llm.requests()[1].body);
    for needle in ["A person took over", "browser_click", "6 characters typed", "solved the captcha", "Signed in"] {
        assert!(second.contains(needle), "{needle} missing from {second}");
    }
    // What the person typed reached the worker only: not the model, the log or the step log.
    assert!(!second.contains("424242"), "{second}");
    let written = std::fs::read_to_string(dir.path().join(&id).join("log.jsonl")).unwrap()
        + &std::fs::read_to_string(dir.path().join(&id).join("steps.jsonl")).unwrap();
    assert!(!written.contains("424242"), "{written}");
    // Ended: nothing to act on or resume.
    assert_error(&act(json!({"tool": "browser_click", "input": {"selector": "#a"}})), 409, "conflict");
    assert_error(&c.post(&format!("/sessions/{id}/resume"), &json!({})), 409, "conflict");
    assert_error(&c.post(&format!("/sessions/{id}/pause"), &json!({})), 409, "conflict");
    llm.assert_well_formed();
}

#[test]
fn the_model_asks_for_a_person_who_is_notified_and_their_acts_come_back() {
    let Asked { d, llm, hook, id, paused, _worker, _dir } =
        asked_for_a_person("takeover-asked", "a CAPTCHA blocks the sign-in");
    let c = d.client();
    assert_eq!(paused["takeover_requested"], "a CAPTCHA blocks the sign-in");
    let hit = wait_until(Duration::from_secs(10), "the takeover notification", || hook.hits().into_iter().next());
    let message = hit.2.to_string();
    assert!(message.contains("take over") && message.contains(&format!("#s/{id}")), "{message}");
    let r = c.post(&format!("/sessions/{id}/act"), &json!({"tool": "browser_press_key", "input": {"key": "Enter"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.post_raw(&format!("/sessions/{id}/resume"), "application/json", b"").status, 202);
    let done = wait_status(&c, &id, "finished");
    assert!(done.get("takeover_requested").is_none(), "{done}");
    // The tool's own result tells the model what happened.
    let results = llm.requests()[1].last_results();
    let told = results.iter().map(Value::to_string).collect::<String>();
    assert!(told.contains("browser_press_key") && told.contains("handed back"), "{told}");
    llm.assert_well_formed();
}

#[test]
fn a_pause_nobody_answers_ends_and_the_model_goes_on() {
    let dir = TempDir::new("takeover-timeout");
    let script = vec![
        tool("request_takeover", json!({"reason": "two-factor code"})),
        tool("finish_task", json!({"summary": "gave up on 2FA"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.task.takeover_timeout_s = 1);
    let _worker = seed_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "log in"}));
    wait_status(&c, &id, "finished");
    let told = llm.requests()[1].last_results().iter().map(Value::to_string).collect::<String>();
    assert!(told.contains("Nobody took over within 1 s"), "{told}");
}

#[test]
fn a_stop_ends_a_paused_session_at_once() {
    let dir = TempDir::new("takeover-stop");
    let script = vec![tool("browser_snapshot", json!({})), tool("finish_task", json!({"summary": "x"}))];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let c = d.client();
    // Paused before any worker came: the pause holds once the agent starts.
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "look"}));
    assert_eq!(c.post_raw(&format!("/sessions/{id}/pause"), "application/json", b"").status, 202);
    assert_error(&c.post(&format!("/sessions/{id}/pause"), &json!({"now": true})), 400, "bad_request");
    let _worker = seed_worker(&d);
    wait_status(&c, &id, "paused");
    assert_eq!(llm.requests().len(), 0);
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{id}")).status, 200);
    wait_status(&c, &id, "stopped");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(llm.requests().len(), 0, "no model call after a stop while paused");
}

/// A reason a page could have written (50 KB, a fake "Open http://…" line first) is kept as one
/// bounded line, and the notification leads with the session's own link.
#[test]
fn a_long_takeover_reason_is_one_bounded_line_after_the_session_s_link() {
    let reason = format!("Open http://evil.test/login\n{}", "please ".repeat(7000));
    let Asked { d, llm: _llm, hook, id, paused, _worker, _dir } = asked_for_a_person("takeover-reason", &reason);
    let c = d.client();
    let kept = paused["takeover_requested"].as_str().unwrap();
    assert!(kept.chars().count() <= 301 && !kept.contains('\n') && kept.ends_with('…'), "{kept}");
    let hit = wait_until(Duration::from_secs(10), "the takeover notification", || hook.hits().into_iter().next());
    let message = hit.2["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("Open http") && message.contains(&format!("#s/{id}")), "{message}");
    assert!(message.find(&format!("#s/{id}")) < message.find("evil.test"), "{message}");
    assert!(message.len() < 1000, "{} bytes", message.len());
    assert_eq!(c.post_raw(&format!("/sessions/{id}/resume"), "application/json", b"").status, 202);
    wait_status(&c, &id, "finished");
}

/// A session paused at its model's request, on a seed-shaped worker that holds
/// `browser_press_key` for a while (`slow`); bind every field, as with `Asked`.
struct Paused {
    d: TestDaemon,
    id: String,
    worker: ScriptedWorker,
    _llm: ScriptedLlm,
    _dir: TempDir,
}

fn paused_session(name: &str, mode: &str, options: Value, slow: Duration) -> Paused {
    let dir = TempDir::new(name);
    let finish = if mode == "explore" { "finish_exploration" } else { "finish_task" };
    let script = vec![
        tool("request_takeover", json!({"reason": "a person is needed"})),
        tool(finish, json!({"summary": "done", "report": "done"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = ScriptedWorker::start(&d.worker_client(), "actbox", &["browser"], true, move |cmd| {
        if cmd["action"] == "browser_press_key" {
            std::thread::sleep(slow);
        }
        json!({"success": true, "data": {"ok": true, "action": cmd["action"]}})
    });
    let (key, what) = if mode == "explore" { ("goal", "look around") } else { ("instruction", "sign in") };
    let id =
        create_session(&d.client(), json!({"mode": mode, "target": "https://x.test", key: what, "options": options}));
    wait_status(&d.client(), &id, "paused");
    Paused { d, id, worker, _llm: llm, _dir: dir }
}

/// An act is one of the tools the session's mode offers, and in a dry run an acting one is
/// described, not done (it ran `write_file` for real and an exploration's act downloaded).
#[test]
fn acts_keep_to_the_mode_s_tools_and_the_dry_run() {
    let explore = paused_session("act-explore", "explore", json!({}), Duration::ZERO);
    let c = explore.d.client();
    let act = |id: &str, body: Value| c.post(&format!("/sessions/{id}/act"), &body);
    let r = act(&explore.id, json!({"tool": "browser_download", "input": {"url": "https://x.test/a.pdf"}}));
    assert_error(&r, 400, "bad_request");
    let seen = explore.worker.seen.lock().unwrap().clone();
    assert!(!seen.iter().any(|c| c["action"] == "browser_download"), "{seen:?}");
    // What an exploration offers still runs.
    assert_eq!(act(&explore.id, json!({"tool": "browser_snapshot", "input": {}})).status, 200);

    let dry = paused_session("act-dry", "task", json!({"dry_run": true}), Duration::ZERO);
    let c = dry.d.client();
    let act = |body: Value| c.post(&format!("/sessions/{}/act", dry.id), &body);
    let r = act(json!({"tool": "browser_click", "input": {"selector": "#buy"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (r.json()["dry_run"].as_bool(), r.json()["is_error"].as_bool()),
        (Some(true), Some(false)),
        "{}",
        r.text()
    );
    // Observing still looks at the real page.
    let r = act(json!({"tool": "browser_snapshot", "input": {}}));
    assert_eq!(r.json()["dry_run"], false, "{}", r.text());
    let seen = dry.worker.seen.lock().unwrap().clone();
    assert!(!seen.iter().any(|c| c["action"] == "browser_click"), "the click was not done: {seen:?}");
    assert!(seen.iter().any(|c| c["action"] == "browser_snapshot"), "{seen:?}");
    let steps = c.get(&format!("/sessions/{}/steps", dry.id)).json();
    let click = steps.as_array().unwrap().iter().find(|s| s["tool"] == "browser_click").unwrap();
    assert_eq!((click["by"].as_str(), click["dry_run"].as_bool()), (Some("human"), Some(true)), "{steps}");
}

/// A stop while the act's command runs on the worker says so: the act did start.
#[test]
fn a_stop_during_an_act_says_the_act_was_running() {
    let s = paused_session("act-stop", "task", json!({}), Duration::from_secs(3));
    let c = s.d.client();
    let (id, acting) = (s.id.clone(), c.clone());
    let act = std::thread::spawn(move || {
        acting.post(&format!("/sessions/{id}/act"), &json!({"tool": "browser_press_key", "input": {"key": "Enter"}}))
    });
    wait_until(Duration::from_secs(10), "the act to reach the worker", || {
        s.worker.seen.lock().unwrap().iter().any(|c| c["action"] == "browser_press_key").then_some(())
    });
    assert_eq!(c.delete(&format!("/sessions/{}", s.id)).status, 200);
    let r = act.join().unwrap();
    assert_error(&r, 409, "conflict");
    let said = r.json()["error"].as_str().unwrap().to_string();
    assert!(said.contains("while the act was running") && !said.contains("before the act ran"), "{said}");
}

/// Ten slow acts at once (ten paused sessions, each on a worker that takes 4 s per act) hold
/// no API thread while their workers run: `/health` and a stop answer within a second, the
/// stopped session's act says it was running, and every other act gets its result.
#[test]
fn slow_acts_hold_no_api_thread() {
    let dir = TempDir::new("act-pool");
    let script = (0..10).map(|_| tool("request_takeover", json!({"reason": "a person is needed"}))).collect();
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let c = d.client();
    let workers: Vec<ScriptedWorker> = (0..10)
        .map(|i| {
            ScriptedWorker::start(&d.worker_client(), &format!("slowbox{i}"), &["browser"], false, |cmd| {
                if cmd["action"] == "browser_press_key" {
                    std::thread::sleep(Duration::from_secs(4));
                }
                json!({"success": true, "data": {"ok": true, "action": cmd["action"]}})
            })
        })
        .collect();
    let ids: Vec<String> = (0..10)
        .map(|_| create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "sign in"})))
        .collect();
    for id in &ids {
        wait_status(&c, id, "paused");
    }
    let acts: Vec<_> = ids
        .iter()
        .map(|id| {
            let (c, id) = (c.clone(), id.clone());
            std::thread::spawn(move || {
                c.post(&format!("/sessions/{id}/act"), &json!({"tool": "browser_press_key", "input": {"key": "Enter"}}))
            })
        })
        .collect();
    // The acts reach their workers at once (before, eight did: one per API thread).
    let at_workers =
        || workers.iter().filter(|w| w.seen.lock().unwrap().iter().any(|c| c["action"] == "browser_press_key")).count();
    let began = Instant::now();
    while at_workers() < 10 && began.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("{} acts at their workers after {:?}", at_workers(), began.elapsed());
    let (status, took) = raw_health(d.api.trim_start_matches("http://"), Duration::from_secs(10));
    eprintln!("/health behind ten acts: {took:?}");
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "/health took {took:?} behind ten acts");
    let t = Instant::now();
    assert_eq!(c.delete(&format!("/sessions/{}", ids[0])).status, 200);
    eprintln!("DELETE behind ten acts: {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(1), "DELETE took {:?} behind ten acts", t.elapsed());
    assert!(began.elapsed() < Duration::from_secs(3), "the acts were still running: {:?}", began.elapsed());
    for (i, act) in acts.into_iter().enumerate() {
        let r = act.join().unwrap();
        if i == 0 {
            assert_error(&r, 409, "conflict");
            assert!(r.json()["error"].as_str().unwrap().contains("while the act was running"), "{}", r.text());
        } else {
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!((r.json()["by"].as_str(), r.json()["is_error"].as_bool()), (Some("human"), Some(false)));
        }
    }
}

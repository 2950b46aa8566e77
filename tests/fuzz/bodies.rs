//! JSON request bodies, decoded as the routes decode them (`http::parse_json`, strict for the
//! API, tolerant for workers), then checked as the routes check them: `POST /sessions`
//! through `session::validate`, `POST /register` through the route's checks and the hub,
//! `POST /result` through the hub to the session thread waiting for it.

use super::*;
use agent_controller::config::Config as DaemonConfig;
use agent_controller::error::ApiError;
use agent_controller::exec::ExecError;
use agent_controller::http::parse_json;
use agent_controller::http::worker_api::check_register;
use agent_controller::hub::{HubSettings, WorkerHub};
use agent_controller::protocol::replay::ReplayRequest;
use agent_controller::protocol::{
    AnswerRequest, Command, CommandResult, ConfirmationAnswer, CreateSessionRequest, RegisterRequest,
};
use agent_controller::session::{SessionError, validate};
use agent_controller::wait::park::Parker;
use agent_controller::wait::stop::StopSignal;
use std::sync::Arc;
use std::time::Duration;

const SESSION_KEYS: &[&str] = &[
    "mode",
    "target",
    "type",
    "instruction",
    "goal",
    "credentials",
    "notifications",
    "worker",
    "llm",
    "model",
    "options",
    "max_turns",
    "auto_confirm",
    "dry_run",
    "lease_timeout_s",
    "screenshot_width",
    "screenshot_quality",
    "approval",
    "username",
    "password",
    "login_url",
    "username_selector",
    "password_selector",
    "submit_selector",
    "telegram",
    "webhook",
    "bot_token",
    "chat_id",
    "url",
    "method",
    "allow_private",
];

const WORDS: &[&str] = &[
    "task",
    "explore",
    "browser",
    "app",
    "shell",
    "auto",
    "validator",
    "human",
    "api",
    "https://example.test/",
    "http://127.0.0.1:8080/x",
    "ssh://user@host:22",
    "ssh://root@[::1]:2222/",
    "ssh://a@b:99999",
    "xterm",
    "Find the price",
    "worker-1",
    "gpt-4o",
    "PUT",
    "POST",
    "GET",
    "correct-horse-battery",
    "123456:ABCDEF-token",
    "-100200300",
];

fn session_examples() -> Vec<Value> {
    vec![
        json!({"mode": "task", "target": "https://example.test/", "instruction": "Find the price"}),
        json!({"mode": "explore", "target": "https://example.test/", "goal": "map it",
               "options": {"max_turns": 5, "auto_confirm": true, "dry_run": false, "lease_timeout_s": 30,
                           "screenshot_width": 1024, "screenshot_quality": 70, "approval": "human"}}),
        json!({"mode": "task", "target": "ssh://deploy@host.test:2222", "type": "shell", "instruction": "uptime",
               "worker": "worker-1", "llm": "api", "model": "gpt-4o"}),
        json!({"mode": "task", "target": "xterm", "instruction": "type", "credentials":
               {"username": "ann", "password": "correct-horse-battery", "login_url": "https://example.test/login",
                "username_selector": "#u", "password_selector": "#p", "submit_selector": "button"},
               "notifications": {"telegram": {"bot_token": "123456:ABCDEF-token", "chat_id": "-100200300"},
                                 "webhook": {"url": "https://hooks.example.test/abc-secret", "method": "PUT"}}}),
    ]
}

/// The secret values a body carries: no error may echo them.
fn secrets(body: &Value) -> Vec<String> {
    let paths: [&[&str]; 3] = [
        &["credentials", "password"],
        &["notifications", "telegram", "bot_token"],
        &["notifications", "webhook", "url"],
    ];
    paths
        .iter()
        .filter_map(|p| p.iter().try_fold(body, |v, k| v.get(k)).and_then(Value::as_str))
        .filter(|s| s.len() >= 8)
        .map(str::to_string)
        .collect()
}

fn hub() -> WorkerHub {
    let settings = HubSettings {
        long_poll: Duration::from_secs(5),
        worker_timeout: Duration::from_secs(60),
        legacy_workers: false,
        max_workers: 0,
    };
    WorkerHub::new(settings, Arc::new(Parker::default()))
}

fn worker_request(hostname: &str) -> RegisterRequest {
    RegisterRequest {
        hostname: hostname.into(),
        has_pywinauto: None,
        has_playwright: None,
        capabilities: Some(vec!["browser".into(), "shell".into()]),
        use_secret: Some(true),
        profiles: None,
    }
}

#[test]
fn fuzz_create_session_bodies() {
    let config = DaemonConfig::default();
    let hub = hub();
    hub.register(&worker_request("worker-1"), None, None).unwrap();
    let input = json_body(SESSION_KEYS, WORDS, &session_examples());
    fuzz("POST /sessions bodies (CreateSessionRequest, session::validate)", input, |body| {
        let hidden = serde_json::from_slice::<Value>(&body).map(|v| secrets(&v)).unwrap_or_default();
        let outcome = parse_json::<CreateSessionRequest>(&body)
            .and_then(|req| validate(req, &config, &hub).map_err(ApiError::from));
        match outcome {
            Ok(new) => {
                let r = &new.record;
                prop_assert!(!r.target.is_empty() && r.target.trim() == r.target);
                prop_assert!((1..=10_000).contains(&r.max_turns));
                let written = serde_json::to_string(r).unwrap();
                for s in &hidden {
                    prop_assert!(!written.contains(s.as_str()), "the record holds a secret: {written}");
                }
            }
            Err(ApiError::BadRequest(m) | ApiError::NotFound(m) | ApiError::Conflict(m)) => {
                for s in &hidden {
                    prop_assert!(!m.contains(s.as_str()), "the error echoes a secret: {m}");
                }
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
        Ok(())
    });
}

#[test]
fn fuzz_small_api_bodies() {
    const KEYS: &[&str] =
        &["confirmation_id", "approved", "reason", "edited_command", "question_id", "text", "params", "instruction"];
    let examples = [
        json!({"confirmation_id": "conf_1", "approved": false, "reason": "no", "edited_command": "ls"}),
        json!({"question_id": "q_1", "text": "the blue one"}),
        json!({"params": {"user": "ann", "socks": "shoes"}, "instruction": "again"}),
    ];
    fuzz("confirm, answer and replay bodies", json_body(KEYS, WORDS, &examples), |body| {
        for outcome in [
            parse_json::<ConfirmationAnswer>(&body).map(drop),
            parse_json::<AnswerRequest>(&body).map(drop),
            parse_json::<ReplayRequest>(&body).map(drop),
        ] {
            prop_assert!(matches!(outcome, Ok(()) | Err(ApiError::BadRequest(_))), "{outcome:?}");
        }
        Ok(())
    });
}

#[test]
fn fuzz_worker_registrations() {
    const KEYS: &[&str] = &["hostname", "capabilities", "has_playwright", "has_pywinauto", "use_secret"];
    let examples = [
        json!({"hostname": "box-1", "capabilities": ["browser", "shell"], "use_secret": true}),
        json!({"hostname": "legacy", "has_playwright": true, "has_pywinauto": false}),
        json!({"hostname": " \tbox-2 ", "capabilities": ["app"]}),
    ];
    fuzz(
        "POST /register bodies (RegisterRequest, the route's checks, the hub)",
        json_body(KEYS, WORDS, &examples),
        |body| {
            let Ok(req) = parse_json::<RegisterRequest>(&body) else { return Ok(()) };
            if check_register(&req).is_err() {
                return Ok(());
            }
            let hub = hub();
            let (worker, secret) = hub.register(&req, None, None).map_err(|r| TestCaseError::fail(format!("{r:?}")))?;
            prop_assert!(!secret.is_empty());
            // What the log and /workers show is printable.
            prop_assert!(!worker.hostname.chars().any(char::is_control), "{:?}", worker.hostname);
            let listed = hub.workers();
            prop_assert_eq!(listed.len(), 1);
            prop_assert!(listed[0].capabilities.iter().all(|c| !c.is_empty() && !c.contains(char::is_whitespace)));
            Ok(())
        },
    );
}

/// What `POST /result` may carry, and whether it answers the command that was sent.
#[derive(Debug, Clone)]
struct Posted {
    body: Vec<u8>,
    same_id: bool,
}

fn result_bodies() -> impl Strategy<Value = Posted> {
    const KEYS: &[&str] =
        &["id", "success", "data", "error", "image_base64", "media_type", "snapshot", "output", "exit_code"];
    let examples = [
        json!({"id": "ID", "success": true, "data": {"output": "ok", "exit_code": 0}}),
        json!({"id": "ID", "success": false, "error": "no such element"}),
        json!({"id": "ID", "success": true, "data": {"image_base64": "iVBORw0KGgo=", "media_type": "image/png",
                                                      "snapshot": "[e1] button \"Go\""}}),
    ];
    (json_body(KEYS, WORDS, &examples), any::<bool>()).prop_map(|(body, same_id)| Posted { body, same_id })
}

#[test]
fn fuzz_worker_results() {
    let hub = Arc::new(hub());
    let (worker, _) = hub.register(&worker_request("results-box"), None, None).unwrap();
    fuzz("POST /result bodies (CommandResult, through the hub to the waiting session)", result_bodies(), |posted| {
        let Ok(mut result) = parse_json::<CommandResult>(&posted.body) else { return Ok(()) };
        let stop = StopSignal::default();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| {
                hub.execute(
                    &worker,
                    &agent_controller::hub::CommandScope::session("sess_fuzz"),
                    "run_command",
                    json!({}),
                    Duration::from_secs(5),
                    &stop,
                )
            });
            let (tx, rx) = crossbeam_channel::bounded(1);
            hub.poll(&worker, Box::new(move |_, body| drop(tx.send(body))));
            let sent: Command = serde_json::from_slice(&rx.recv_timeout(Duration::from_secs(5)).unwrap()).unwrap();
            if posted.same_id {
                result.id = sent.id.clone();
            }
            let (success, data, error) = (result.success, result.data.clone(), result.error.clone());
            let taken = hub.post_result(&worker, result);
            prop_assert_eq!(taken, posted.same_id || sent.id == posted_id(&posted));
            if !taken {
                stop.raise();
            }
            let outcome = waiting.join().unwrap();
            match (taken, success, outcome) {
                (true, true, Ok(v)) => {
                    let sent = data.map_or(Value::Null, |d| serde_json::from_str(d.get()).unwrap_or_default());
                    prop_assert_eq!(v.into_tree(), sent)
                }
                (true, false, Err(ExecError::Failed(m))) => {
                    prop_assert!(!m.trim().is_empty());
                    if let Some(e) = error.filter(|e| !e.trim().is_empty()) {
                        prop_assert_eq!(m, e);
                    }
                }
                (false, _, Err(ExecError::Stopped)) => {}
                (t, ok, other) => prop_assert!(false, "taken {t}, success {ok}: {other:?}"),
            }
            Ok(())
        })
    });
}

fn posted_id(p: &Posted) -> String {
    serde_json::from_slice::<Value>(&p.body).ok().and_then(|v| v["id"].as_str().map(str::to_string)).unwrap_or_default()
}

/// A finished session's recorded steps, with placeholders (one spaced) and plain values.
fn recorded_steps() -> Vec<Value> {
    let step = |tool: &str, args: Value| json!({"tool": tool, "args": args, "is_error": false, "dry_run": false});
    vec![
        step("browser_navigate", json!({"url": "https://shop.test/?q={{item}}"})),
        step("browser_type", json!({"selector": "#user", "text": "{{ user }}"})),
        step("save_note", json!({"content": "{{local}} tools are not replayed"})),
        step("run_command", json!({"command": "echo socks {{item}}", "timeout_s": 5})),
        json!({"tool": "browser_click", "args": {"selector": "#x"}, "is_error": true}),
    ]
}

#[test]
fn fuzz_replay_params() {
    let log = recorded_steps();
    let name = prop_oneof![
        4 => prop::sample::select(vec!["item", "user", "socks", "", " ", "{{item}}", "shop"]).prop_map(str::to_string),
        1 => text(),
    ];
    let value = prop_oneof![3 => "[a-z ]{0,8}", 1 => text()];
    let params = prop::collection::btree_map(name, value, 0..5);
    fuzz("replay params (POST /sessions/:id/replay, session::plan_replay)", params, |params| {
        let body = serde_json::to_vec(&json!({"params": params})).unwrap();
        let req: ReplayRequest = parse_json(&body).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        match agent_controller::session::plan_replay(&log, &req.params) {
            Ok(steps) => {
                prop_assert_eq!(steps.len(), 3, "the three target steps that succeeded");
                prop_assert!(params.contains_key("item") && params.contains_key("user"));
                prop_assert!(!params.contains_key(""));
                // Every placeholder was filled, unless a value brought one in.
                let text = serde_json::to_string(&steps.iter().map(|s| &s.args).collect::<Vec<_>>()).unwrap();
                let brought = params.iter().any(|(k, v)| v.contains("{{") || k.contains("{{") || k.contains('}'));
                prop_assert!(brought || !(text.contains("{{item}}") || text.contains("{{ user }}")), "{text}");
            }
            Err(e) => {
                prop_assert!(matches!(e, SessionError::Invalid(_)), "{e:?}");
                // Exactly the placeholders, plainly valued, are always accepted.
                let exact = params.len() == 2
                    && params.contains_key("item")
                    && params.contains_key("user")
                    && params.values().all(|v| !v.contains('{') && !v.contains('}'));
                prop_assert!(!exact, "refused {params:?}: {e:?}");
            }
        }
        Ok(())
    });
}

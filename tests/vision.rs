//! Models without vision, through the real daemon, agent-worker and Chromium: a text-only
//! OpenAI-compatible server that answers 500 to any image (as llama.cpp does without a vision
//! projector) still gets a login task finished; the session drops the images once, says so in
//! its prompt, and later screenshots reach the model as words. With `api.vision: false` no
//! image is ever sent, even to a server that would take one.

use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::wire::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::json;

#[test]
fn a_text_only_model_finishes_a_login_task() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("text-only");
    let w = Wire::OpenAi;
    let script = vec![
        w.tool("perform_login", json!({})),
        w.tool("browser_screenshot", json!({})),
        // (the request with the screenshot is refused; the same turn is asked again without it)
        w.tool("browser_snapshot", json!({})),
        w.tool("browser_screenshot", json!({})),
        w.tool("finish_task", json!({"summary": "logged in as alice"})),
    ];
    let llm = ScriptedLlm::start_text_only(w, "small-model", script);
    let session = json!({"mode": "task", "target": format!("{}/", site.url), "instruction": "log in",
        "credentials": {"username": "alice@example.test", "password": "s3cret-pw", "login_url": format!("{}/login", site.url)}});
    let (d, id, s) = run_session(&dir, &llm, |_| {}, session);
    let c = d.client();
    assert_eq!(s["status"], "finished", "{s}");
    llm.assert_well_formed();
    let reqs = llm.requests();
    let images: Vec<usize> = reqs.iter().map(|r| usize::from(r.body.to_string().contains("image_url"))).collect();
    assert_eq!(images, [0, 0, 1, 0, 0, 0], "one refused request, no retry of it, none with images after");
    let login = reqs[1].body["messages"].to_string();
    assert!(login.contains("Welcome alice"), "the login answered with text: {login}");
    let system = reqs[3].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("cannot see images"), "{system}");
    let later = reqs[5].body["messages"].to_string();
    assert!(later.contains("screenshot saved as") && later.contains("cannot see images"), "{later}");
    let log = c.get(&format!("/sessions/{id}/log")).text();
    assert!(log.contains("session goes on text-only"), "{log}");
}

#[test]
fn vision_false_never_sends_an_image() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("vision-off");
    let w = Wire::OpenAi;
    let script = vec![
        w.tool("browser_navigate", json!({"url": format!("{}/", site.url)})),
        w.tool("browser_screenshot", json!({})),
        w.tool("finish_task", json!({"summary": "looked at the page"})),
    ];
    // This server would accept images: only the config keeps them out.
    let llm = ScriptedLlm::start_wire(w, "small-model", script);
    let session = json!({"mode": "task", "target": format!("{}/", site.url), "instruction": "look"});
    let (_d, id, s) = run_session(&dir, &llm, |c| c.api.vision = agent_controller::config::Vision::Off, session);
    assert_eq!(s["status"], "finished", "{s}");
    llm.assert_well_formed();
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs.iter().all(|r| !r.body.to_string().contains("image_url")), "no request carries an image");
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("cannot see images"), "told from the first request: {system}");
    let later = reqs[2].body["messages"].to_string();
    assert!(later.contains("screenshot saved as"), "the screenshot reached the model as words: {later}");
    // The screenshot itself was still kept for the person.
    let files = std::fs::read_dir(dir.path().join(&id).join("screenshots")).unwrap().count();
    assert!(files >= 1, "the screenshot was stored");
}

/// A daemon on the OpenAI-compatible `small-model` at `llm` (after `tune`) with a real browser
/// worker: `session` runs to its end. The daemon, the session's id and its final record.
fn run_session(
    dir: &TempDir,
    llm: &ScriptedLlm,
    tune: impl FnOnce(&mut agent_controller::config::Config),
    session: serde_json::Value,
) -> (TestDaemon, String, serde_json::Value) {
    let mut config = test_config(dir.path());
    config.api.provider = "openai".into();
    config.api.model = "small-model".into();
    config.api.base_url = llm.url.clone();
    tune(&mut config);
    let agent = agent_controller::agent::llm_agent(&config);
    let d = TestDaemon::start(config, agent);
    let _worker = RealWorker::start(&d, "vision-box", "browser");
    let c = d.client();
    let id = create_session(&c, session);
    let s = wait_until(std::time::Duration::from_secs(60), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running"].contains(&s["status"].as_str().unwrap())).then_some(s)
    });
    (d, id, s)
}

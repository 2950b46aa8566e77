//! Taking over from the web page, in real Chromium on both sides: the page's Take over
//! button pauses a session on the real worker (real Chromium), the live screenshot shows its
//! page, a click on the picture lands on the element under it, and Resume hands back with a
//! note that the model then reads with the page as it is now.

use crate::support::browser::Browser;
use crate::support::llm::*;
use crate::support::site::Site;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::json;
use std::time::Duration;

const TOKEN: &str = "web-takeover-token-0815";
const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_click_on_the_picture_lands_on_the_element_under_it() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("web-takeover");
    // The first call is slow, so the person's pause comes during it.
    let script = vec![
        tool("browser_snapshot", json!({})).delayed(Duration::from_secs(3)),
        tool("finish_task", json!({"summary": "the person pressed it"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |c| {
        c.server.api_token = agent_controller::util::secret::Secret::new(TOKEN);
    });
    let _worker = RealWorker::start(&d, "takeover-box", "browser");
    let id = create_session(
        &d.client().with_token(Some(TOKEN)),
        json!({"mode": "task", "target": format!("{}/big-button", site.url), "instruction": "press the big button"}),
    );
    let mut b = Browser::launch(1280, 900);
    b.navigate(&format!("{}/#s/{id}", d.api));
    b.wait_for("!document.getElementById('token-panel').hidden", LONG);
    b.type_into("#token-input", TOKEN);
    b.click("#token-form button");
    b.wait_for("!document.getElementById('s-takeover').hidden", LONG);
    // Taken over after the model's first call (its step, the page's frame, take their time).
    wait_until(LONG, "the model's first call", || (!llm.requests().is_empty()).then_some(()));
    b.click("#s-takeover");
    // Paused: the panel shows and the screen turns live with the worker's page on it.
    b.wait_for("!document.getElementById('takeover').hidden", LONG);
    b.wait_for("document.getElementById('shot').classList.contains('live') && document.getElementById('shot').naturalWidth > 0", LONG);
    assert_eq!(llm.requests().len(), 1, "no model call while paused");
    // The big button's middle is at (250, 175) in the worker's viewport (device scale 1).
    let at = b.eval(
        "(() => { const img = document.getElementById('shot'); img.scrollIntoView({block: 'center'});
           const r = img.getBoundingClientRect();
           return {x: r.left + 250 * r.width / img.naturalWidth, y: r.top + 175 * r.height / img.naturalHeight}; })()",
    );
    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
        b.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": at["x"], "y": at["y"], "button": "left", "clickCount": 1}),
        );
    }
    b.wait_for("document.getElementById('t-result').textContent.startsWith('browser_click')", LONG);
    let steps = d.client().with_token(Some(TOKEN)).get(&format!("/sessions/{id}/steps")).json();
    let click = steps.as_array().unwrap().iter().find(|s| s["by"] == "human" && s["tool"] == "browser_click").cloned();
    let click = click.unwrap_or_else(|| panic!("no click by the person in {steps}"));
    assert!(click["observation"].as_str().unwrap().contains("button"), "{click}");
    // Resume with a note; the model reads it and the page with the button pressed.
    b.type_into("#t-note", "I pressed it for you");
    b.click("#t-resume button");
    wait_until(LONG, "the session to finish", || {
        let s = d.client().with_token(Some(TOKEN)).get(&format!("/sessions/{id}")).json();
        (s["status"] == "finished").then_some(())
    });
    let told = llm.requests()[1].body["messages"].to_string();
    assert!(told.contains("I pressed it for you"), "{told}");
    assert!(told.contains("The big button was pressed"), "the click reached the element under it: {told}");
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}

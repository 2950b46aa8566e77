//! The web page's handing over (issue 67), in a real headless Chromium against the real daemon
//! (scripted model, scripted worker): the new-session form's files reach the session as its
//! inputs byte for byte and its browser profile is asked for; the browser profiles panel lists
//! the worker's profile and its delete button has the worker remove it.

use crate::support::browser::Browser;
use crate::support::llm::*;
use crate::support::worker::have_chromium;
use crate::support::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(20);

#[test]
fn the_form_hands_over_files_and_the_panel_deletes_a_profile() {
    if !have_chromium() {
        return;
    }
    let dir = TempDir::new("web-handover");
    let script = vec![tool("finish_task", json!({"summary": "done"})).delayed(Duration::from_millis(500))];
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = Arc::clone(&seen);
    let _worker = ScriptedWorker::start(&d.worker_client(), "web-box", &["browser"], false, move |cmd| {
        log.lock().unwrap().push(cmd.clone());
        let kept = if cmd["action"] == "delete_browser_profile" {
            json!([])
        } else {
            json!([{"name": "shop", "size_kb": 40}])
        };
        json!({"success": true, "data": {"ok": true}, "profiles": kept})
    });
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let file = dir.path().join("price list.bin");
    std::fs::write(&file, &bytes).unwrap();

    let mut b = Browser::launch(1280, 900);
    b.navigate(&format!("{}/", d.api));
    b.wait_for("document.getElementById('f-llm').options.length > 0", LONG);
    b.type_into("#f-target", "https://shop.example.test/");
    b.type_into("#f-what", "Upload the price list");
    b.type_into("#f-profile", "shop");
    let field = b.call("Runtime.evaluate", json!({"expression": "document.getElementById('f-files')"}));
    let object = field["result"]["objectId"].as_str().unwrap().to_string();
    b.call("DOM.setFileInputFiles", json!({"files": [file.to_str().unwrap()], "objectId": object}));
    b.click("#f-submit");
    b.wait_for("location.hash.startsWith('#s/')", LONG);
    let id = b.eval("decodeURIComponent(location.hash.slice(3))").as_str().unwrap().to_string();
    let c = d.client();
    let record = wait_status(&c, &id, "finished");
    assert_eq!(record["options"]["browser_profile"], "shop", "{record}");
    assert_eq!(record["inputs"], json!(["price list.bin"]));
    assert_eq!(c.get(&format!("/sessions/{id}/files/price%20list.bin")).body, bytes, "the file, byte for byte");
    assert!(seen.lock().unwrap().iter().all(|c| c["browser_profile"] == "shop"), "every command in the profile");

    // The panel lists the profile; its delete button has the worker remove it.
    b.wait_for("document.querySelector('#profiles li[data-name=\"shop\"]') !== null", LONG);
    let row = b.eval("document.querySelector('#profiles li[data-name=\"shop\"]').textContent");
    assert!(row.as_str().unwrap().contains("web-box") && row.as_str().unwrap().contains("40 KB"), "{row}");
    b.click("#profiles li[data-name=\"shop\"] .delete-profile");
    b.wait_for("document.getElementById('profiles-panel').hidden", LONG);
    let deleted =
        seen.lock().unwrap().iter().any(|c| c["action"] == "delete_browser_profile" && c["params"]["name"] == "shop");
    assert!(deleted, "the worker was asked to delete it");
    assert_eq!(c.get("/profiles").json(), json!([]));
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}

//! Profiles and the guard table through the real daemon and agent, a scripted model and a
//! scripted browser worker: a capable model on the default config (`full`) gets the whole
//! catalog, its composed file saved at once and its filled form sent as filled; the `small`
//! profile's guards fire by name (log, record, `/metrics`) and switch off by name.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};

const PAGE: &str = "Page: \"Order\" — https://shop.test/order (HTTP 200)\n\
    [e4] select \"Size\" name=size: S (selected) | M | L\n\
    [e6] input text \"Name\" name=name\n[e7] button \"Place order\"";

/// A shop whose order form sends at once unless the controller asks the worker to confirm
/// untouched fields (the small profile's `form_defaults`): then the first click is refused, once.
fn shop(d: &TestDaemon) -> ScriptedWorker {
    let refused = std::sync::atomic::AtomicBool::new(false);
    ScriptedWorker::start(&d.worker_client(), "shop-box", &["browser"], false, move |cmd| {
        let p = &cmd["params"];
        let confirm = p["confirm_defaults"] == true;
        match cmd["action"].as_str().unwrap() {
            "browser_click" if confirm && !refused.swap(true, std::sync::atomic::Ordering::SeqCst) => {
                json!({"success": false, "error": "not sent yet", "data": {"refused": "form_unset",
                       "selector": "ref=e7", "fields": [{"ref": "e4", "label": "Size", "kind": "select", "value": "S",
                                                                    "options": ["S", "M", "L"]}]}})
            }
            "browser_click" => json!({"success": true, "data": {"url": "https://shop.test/thanks",
                "snapshot": "Page: \"Thanks\" — https://shop.test/thanks (HTTP 200)\n[e9] heading 1 \"Thank you\""}}),
            "browser_fill_form" => json!({"success": true, "data": {"filled": p["fields"].as_array().unwrap().len()}}),
            _ => json!({"success": true, "data": {"url": "https://shop.test/order", "snapshot": PAGE}}),
        }
    })
}

fn fill() -> Step {
    tool("browser_fill_form", json!({"fields": [{"selector": "ref=e6", "value": "Quentin Zarkov"}]}))
}

fn click() -> Step {
    tool("browser_click", json!({"selector": "ref=e7"}))
}

/// A summary the model computed: numbers no page showed.
fn save() -> Step {
    tool("save_file", json!({"filename": "summary.csv", "content": "Order,Total\nQZ-7731,4812"}))
}

fn finish() -> Step {
    tool("finish_task", json!({"summary": "ordered"}))
}

/// A model that fills the form with values it composed, sends it, saves a summary it computed
/// and finishes.
fn capable_script() -> Vec<Step> {
    vec![fill(), click(), save(), finish()]
}

fn order(d: &TestDaemon, options: Value) -> (String, Value) {
    let c = d.client();
    let body = json!({"mode": "task", "target": "https://shop.test/order",
                      "instruction": "Order for me and save a summary as summary.csv.", "options": options});
    let id = create_session(&c, body);
    let s = wait_status(&c, &id, "finished");
    (id, s)
}

fn actions(worker: &ScriptedWorker) -> Vec<String> {
    worker.seen.lock().unwrap().iter().map(|c| c["action"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_capable_model_on_the_default_config_is_not_second_guessed() {
    let dir = TempDir::new("profile-full");
    let (d, llm) = llm_daemon(dir.path(), capable_script(), |_| {});
    let worker = shop(&d);
    let (id, s) = order(&d, json!({}));
    assert_eq!(s["profile"]["name"], "full", "{s}");
    assert!(s["profile"]["why"].as_str().unwrap().starts_with("auto:"), "{s}");
    assert!(s.get("guards_fired").is_none(), "no guard fired: {s}");
    // The form went out as the model filled it, at the first click; the summary was saved at once.
    assert_eq!(actions(&worker), ["browser_navigate", "browser_fill_form", "browser_click"]);
    let click = &worker.seen.lock().unwrap()[2]["params"];
    assert_eq!(click["confirm_defaults"], json!(false));
    let c = d.client();
    assert_eq!(c.get(&format!("/sessions/{id}/files/summary.csv")).text(), "Order,Total\nQZ-7731,4812");
    let reqs = llm.requests();
    let names = reqs[0].tool_names();
    for seed in ["browser_scrape_links", "browser_download_batch", "browser_screenshot", "browser_hover", "save_note"] {
        assert!(names.iter().any(|n| n == seed), "{seed} is offered: {names:?}");
    }
    let last = reqs[0].body["messages"][0]["content"].as_array().unwrap().last().unwrap().to_string();
    assert!(!last.contains("(Reminder)"), "no recital: {last}");
}

#[test]
fn the_small_profile_s_guards_fire_by_name_and_switch_off_by_name() {
    let dir = TempDir::new("profile-small");
    // The submit held once and insisted on. The typing and the computed summary go at once.
    let mut script = vec![fill(), click(), click(), save(), finish()];
    script.extend(capable_script());
    let (d, _llm) = llm_daemon(dir.path(), script, |_| {});
    let worker = shop(&d);
    let (id, s) = order(&d, json!({"profile": "small"}));
    assert_eq!(s["profile"], json!({"name": "small", "why": "asked for by the session (options.profile)"}));
    let fired = &s["guards_fired"];
    for guard in ["form_defaults", "short_catalog"] {
        assert_eq!(fired[guard], 1, "{guard}: {s}");
    }
    assert_eq!(actions(&worker), ["browser_navigate", "browser_fill_form", "browser_click", "browser_click"]);
    // Held once in the session: the same submit is not held again, on this page or a later one.
    let confirms: Vec<Value> =
        worker.seen.lock().unwrap()[2..4].iter().map(|c| c["params"]["confirm_defaults"].clone()).collect();
    assert_eq!(confirms, [json!(true), json!(false)]);
    assert_eq!(d.client().get(&format!("/sessions/{id}/files/summary.csv")).text(), "Order,Total\nQZ-7731,4812");
    let log = d.client().get(&format!("/sessions/{id}/log")).json();
    let guards: Vec<&str> =
        log["entries"].as_array().unwrap().iter().filter_map(|e| e["data"]["guard"].as_str()).collect();
    assert!(guards.contains(&"form_defaults") && guards.contains(&"short_catalog"), "{guards:?}");
    let metrics = d.client().get("/metrics").text();
    assert!(metrics.contains("agent_controller_guard_firings_total{guard=\"form_defaults\"} 1"), "{metrics}");
    assert!(metrics.contains("agent_controller_guard_firings_total{guard=\"loop_hold\"} 0"), "every row is listed");

    // The same model with every guard off but the catalog: typed and saved at once.
    let before = actions(&worker).len();
    let (id, s) = order(&d, json!({"profile": "small", "guards": {"all": false, "short_catalog": true}}));
    assert_eq!(s["guards_fired"], json!({"short_catalog": 1}), "{s}");
    assert_eq!(actions(&worker)[before..], ["browser_navigate", "browser_fill_form", "browser_click"]);
    assert_eq!(d.client().get(&format!("/sessions/{id}/files/summary.csv")).text(), "Order,Total\nQZ-7731,4812");

    let bad = d.client().post(
        "/sessions",
        &json!({"mode": "task", "target": "https://shop.test/", "instruction": "x", "options": {"guards": {"nope": false}}}),
    );
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().unwrap().contains("no guard \"nope\""), "{}", bad.text());
}

#[test]
fn config_check_names_each_endpoint_s_profile_and_why() {
    let dir = TempDir::new("profile-config");
    let mut config = test_config(dir.path());
    config.providers.insert("local".into(), provider("openai", "http://127.0.0.1:18080", "qwen2.5-coder-1.5b"));
    config.validate().unwrap();
    let yaml = config.effective_yaml();
    assert!(yaml.contains("#     profile: small (auto: model \"qwen2.5-coder-1.5b\" has 1.5B parameters"), "{yaml}");
    assert!(yaml.contains("#     profile: full (auto: model"), "{yaml}");
}

fn provider(provider: &str, base_url: &str, model: &str) -> agent_controller::config::ProviderConfig {
    agent_controller::config::ProviderConfig {
        provider: provider.into(),
        base_url: base_url.into(),
        model: model.into(),
        ..Default::default()
    }
}

/// A small-profile session on a task none of the guards was written for (a library's opening
/// hours, two pages, a search typed from the task's words), run the way it should be: no guard
/// but the catalog and the recital (once, after the file is saved) acts, so none costs a turn
/// where nothing went wrong.
#[test]
fn the_small_profile_s_guards_stay_quiet_on_a_run_that_goes_right() {
    let home = "Page: \"City Library\" — https://library.test/ (HTTP 200)\n\
                [e1] link \"Visit\" → https://library.test/visit\n[e2] input search \"Search\" name=q\n[e3] button \"Go\"";
    let visit = "Page: \"Visit\" — https://library.test/visit (HTTP 200)\n[e5] heading 1 \"Visit us\"\n\
                 text \"Open Tuesday to Saturday, 9:30 to 18:00\"\n[e6] link \"Home\" → https://library.test/";
    let script = vec![
        tool("browser_type", json!({"selector": "ref=e2", "text": "Saturday"})),
        tool("browser_click", json!({"selector": "ref=e1"})),
        tool("save_file", json!({"filename": "hours.txt", "content": "Tuesday to Saturday, 9:30 to 18:00"})),
        tool("finish_task", json!({"summary": "Open Tuesday to Saturday, 9:30 to 18:00"})),
    ];
    let dir = TempDir::new("profile-quiet");
    let (d, _llm) = llm_daemon(dir.path(), script, small);
    let _worker = ScriptedWorker::start(&d.worker_client(), "lib-box", &["browser"], false, move |cmd| {
        let page = if cmd["action"] == "browser_click" { visit } else { home };
        json!({"success": true, "data": {"url": "https://library.test/", "snapshot": page}})
    });
    let c = d.client();
    let body = json!({"mode": "task", "target": "https://library.test/",
                      "instruction": "When is the library open on Saturday? Save the hours in hours.txt."});
    let id = create_session(&c, body);
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["profile"]["name"], "small");
    let fired: Vec<&str> = s["guards_fired"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(fired, ["recital", "short_catalog"], "{s}");
    assert_eq!(s["guards_fired"]["recital"], 1, "only the request after the save: {s}");
    assert_eq!(c.get(&format!("/sessions/{id}/files/hours.txt")).text(), "Tuesday to Saturday, 9:30 to 18:00");
}

//! Every model a user has, through the real daemon: the download flow on each wire format
//! (Anthropic, OpenAI-compatible, Gemini) with the real worker and Chromium, the quirks real
//! OpenAI-compatible servers have, a Gemini `thoughtSignature` round trip and its retry delay,
//! JSON action mode (fences, aliases, one bad reply, two bad replies, a reply schema built from
//! the page), named endpoints, and no
//! key of any provider in the output directory.

use crate::support::llm::*;
use crate::support::site::{Site, pdf_bytes};
use crate::support::wire::*;
use crate::support::worker::{RealWorker, have_chromium};
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;

fn ended(c: &Client, id: &str) -> Value {
    wait_until(Duration::from_secs(90), "the session to end", || {
        let s = c.get(&format!("/sessions/{id}")).json();
        (!["waiting", "running", "confirming"].contains(&s["status"].as_str().unwrap())).then_some(s)
    })
}

fn download_flow(wire: Wire) {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new(&format!("flow-{}", wire.provider()));
    let script = vec![
        wire.tool("browser_navigate", json!({"url": format!("{}/", site.url)})),
        wire.tool("browser_scrape_links", json!({"selector": "#toc", "pattern": "\\.pdf$"})),
        wire.tool("browser_download", json!({"url": format!("{}/files/chapter1.pdf", site.url)})),
        wire.tool("browser_screenshot", json!({})),
        wire.tool("save_file", json!({"filename": "links.csv", "content": "name,url\nchapter1,/files/chapter1.pdf\n"})),
        wire.tool("finish_task", json!({"summary": "one PDF and the list of links"})),
    ];
    let signature = script[0].body["candidates"][0]["content"]["parts"][0]["thoughtSignature"].clone();
    let (d, llm) = wire_daemon(dir.path(), wire, script, |_| {});
    let _worker = RealWorker::start(&d, "flow-box", "browser");
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": format!("{}/", site.url), "instruction": "Get the first chapter and the links"}),
    );
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    llm.assert_well_formed();
    assert_eq!(s["llm"], json!({"name": "api", "provider": wire.provider(), "model": "test-model"}));
    // Six calls of 100 fresh input tokens (plus 50 cached) and 20 output tokens each.
    assert_eq!(s["usage"]["input_tokens"], 600, "{s}");
    assert_eq!(s["usage"]["output_tokens"], 120);
    assert_eq!(s["usage"]["cache_read_input_tokens"], 300);
    assert_eq!(c.get(&format!("/sessions/{id}/files/chapter1.pdf")).body, pdf_bytes("chapter1.pdf"));
    assert!(c.get(&format!("/sessions/{id}/files/links.csv")).text().contains("chapter1"));
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 6);
    let key = format!("sk-{}-key-123", wire.provider());
    match wire {
        Wire::Anthropic => assert_eq!(reqs[0].header("x-api-key"), Some(key.as_str())),
        Wire::OpenAi => check_openai_flow(&reqs, &key),
        Wire::Gemini => check_gemini_flow(&reqs, &key, &signature),
    }
    for (path, bytes) in all_files(dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains(&key), "the key is in {path:?}");
    }
}

fn check_openai_flow(reqs: &[Recorded], key: &str) {
    let auth = format!("Bearer {key}");
    assert_eq!(reqs[0].header("authorization"), Some(auth.as_str()));
    let first = &reqs[0].body;
    assert_eq!(first["model"], "test-model");
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("You carry out a task"));
    let tool = &first["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["function"]["parameters"]["type"], "object");
    // After the screenshot: the tool message, then a user message with the image as a data URL.
    let msgs = reqs[4].body["messages"].as_array().unwrap();
    let (last, before) = (&msgs[msgs.len() - 1], &msgs[msgs.len() - 2]);
    assert_eq!(before["role"], "tool");
    assert_eq!(last["role"], "user");
    let url = last["content"].as_array().unwrap().iter().find_map(|p| p["image_url"]["url"].as_str()).unwrap();
    assert!(url.starts_with("data:image/png;base64,"), "{}", &url[..40]);
}

fn check_gemini_flow(reqs: &[Recorded], key: &str, signature: &Value) {
    assert_eq!(reqs[0].header("x-goog-api-key"), Some(key));
    let first = &reqs[0].body;
    assert!(first["systemInstruction"]["parts"][0]["text"].as_str().unwrap().contains("You carry out a task"));
    let decl = &first["tools"][0]["functionDeclarations"][0];
    assert_eq!(decl["parameters"]["type"], "OBJECT");
    assert!(!first["tools"].to_string().contains("additionalProperties"));
    // The call comes back with its signature, unchanged, and its response names it.
    let contents = reqs[1].body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], *signature);
    assert_eq!(contents[2]["parts"][0]["functionResponse"]["name"], "browser_navigate");
    // The screenshot rides beside its functionResponse as inline data.
    let parts = reqs[4].body["contents"].as_array().unwrap().last().unwrap()["parts"].as_array().unwrap().clone();
    assert_eq!(parts[0]["functionResponse"]["name"], "browser_screenshot");
    assert_eq!(parts.last().unwrap()["inlineData"]["mimeType"], "image/png", "{parts:?}");
}

#[test]
fn the_download_flow_on_anthropic() {
    download_flow(Wire::Anthropic);
}

#[test]
fn the_download_flow_on_openai_compatible() {
    download_flow(Wire::OpenAi);
}

#[test]
fn the_download_flow_on_gemini() {
    download_flow(Wire::Gemini);
}

/// A scripted browser worker that answers every command with a small success.
fn ok_worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(
        &d.worker_client(),
        "box",
        &["browser"],
        false,
        |cmd| json!({"success": true, "data": {"done": cmd["action"]}}),
    )
}

fn actions(worker: &ScriptedWorker) -> Vec<(String, Value)> {
    let seen = worker.seen.lock().unwrap();
    seen.iter().map(|c| (c["action"].as_str().unwrap().to_string(), c["params"].clone())).collect()
}

#[test]
fn openai_quirks_are_tolerated() {
    let dir = TempDir::new("openai-quirks");
    let nav = |url: &str| json!({"name": "browser_navigate", "arguments": {"url": url}});
    let script = vec![
        // No id, object arguments, content null, finish_reason "stop".
        openai_message(
            json!({"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": nav("https://a.test/")}]}),
            "stop",
        ),
        // Two calls with the same id.
        openai_message(
            json!({"role": "assistant", "content": "two at once", "tool_calls": [
            {"id": "dup", "type": "function", "function": {"name": "browser_navigate", "arguments": "{\"url\":\"https://b.test/\"}"}},
            {"id": "dup", "type": "function", "function": {"name": "browser_get_text", "arguments": ""}}]}),
            "tool_calls",
        ),
        openai_tools(None, &[("finish_task", json!({"summary": "seen it all"}))]),
    ];
    let (d, llm) = wire_daemon(dir.path(), Wire::OpenAi, script, |_| {});
    let worker = ok_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "look"}));
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(s["summary"], "seen it all");
    llm.assert_well_formed();
    let names: Vec<String> = actions(&worker).into_iter().map(|(a, _)| a).collect();
    // The opening navigate, then the model's calls.
    assert_eq!(names, ["browser_navigate", "browser_navigate", "browser_navigate", "browser_get_text"]);
    let reqs = llm.requests();
    // The duplicate ids were replaced: two distinct tool messages answer the second turn.
    let ids: Vec<String> = reqs[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 3, "{ids:?}");
}

/// `text_call`: a call written as text (a fence, `<tool_call>` tags) runs as that call in the
/// small profile, in every wire format alike; in `full` it is the model's text.
#[test]
fn a_call_written_as_text_runs_in_the_small_profile_in_every_wire_format() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::Gemini] {
        let dir = TempDir::new("text-call");
        let script = vec![
            wire.text(
                "I will look at the page.\n```json\n{\"name\": \"browser_get_page_info\", \"arguments\": {}}\n```",
            ),
            wire.text(
                "<tool_call>{\"name\": \"finish_task\", \"arguments\": {\"summary\": \"seen it all\"}}</tool_call>",
            ),
        ];
        let (d, llm) = wire_daemon(dir.path(), wire, script, |_| {});
        let worker = ok_worker(&d);
        let c = d.client();
        let task = json!({"mode": "task", "target": "https://a.test/", "instruction": "look", "options": {"profile": "small"}});
        let id = create_session(&c, task);
        let s = ended(&c, &id);
        assert_eq!(
            (s["status"].as_str(), s["summary"].as_str()),
            (Some("finished"), Some("seen it all")),
            "{wire:?} {s}"
        );
        assert_eq!(s["guards_fired"]["text_call"], 2, "{wire:?} {s}");
        llm.assert_well_formed();
        let names: Vec<String> = actions(&worker).into_iter().map(|(a, _)| a).collect();
        assert_eq!(names, ["browser_navigate", "browser_get_page_info"], "{wire:?}");
        let steps = c.get(&format!("/sessions/{id}/steps")).json();
        let marks: Vec<&Value> = steps.as_array().unwrap().iter().map(|st| &st["guard"]).collect();
        assert_eq!(
            marks,
            [&Value::Null, &json!("text_call"), &json!("text_call")],
            "{wire:?} each step names its unit"
        );
    }
    // In `full`, the text is the model's words: nudged once, then the end.
    let dir = TempDir::new("text-call-full");
    let fenced = "```json\n{\"name\": \"browser_get_page_info\", \"arguments\": {}}\n```";
    let (d, _llm) = wire_daemon(dir.path(), Wire::OpenAi, vec![openai_text(fenced), openai_text(fenced)], |_| {});
    let worker = ok_worker(&d);
    let c = d.client();
    let task =
        json!({"mode": "task", "target": "https://a.test/", "instruction": "look", "options": {"profile": "full"}});
    let s = ended(&c, &create_session(&c, task));
    let names: Vec<String> = actions(&worker).into_iter().map(|(a, _)| a).collect();
    assert_eq!(names, ["browser_navigate"], "{s}");
    assert!(s["guards_fired"].get("text_call").is_none(), "{s}");
}

#[test]
fn gemini_waits_the_retry_delay_it_is_given() {
    let dir = TempDir::new("gemini-retry");
    let exhausted = Step {
        status: 429,
        headers: vec![],
        body: json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}),
        delay: Duration::ZERO,
    };
    let script = vec![exhausted, gemini_tools(&[("finish_task", json!({"summary": "after the wait"}))])];
    let (d, llm) = wire_daemon(dir.path(), Wire::Gemini, script, |_| {});
    let _worker = ok_worker(&d);
    let c = d.client();
    let started = std::time::Instant::now();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "wait"}));
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert!(started.elapsed() >= Duration::from_millis(1400), "{:?}", started.elapsed());
    assert_eq!(llm.requests().len(), 2);
}

fn json_daemon(dir: &TempDir, script: Vec<Step>) -> (TestDaemon, ScriptedLlm) {
    wire_daemon(dir.path(), Wire::OpenAi, script, |c| c.api.tool_mode = "json".into())
}

#[test]
fn json_mode_reads_fences_aliases_and_nesting() {
    let dir = TempDir::new("json-mode");
    let script = vec![
        openai_text(
            "```json\n{\"action\": \"next_step\", \"thinking\": {\"plan\": \"open it\"}, \"tool\": \"browser_navigate\", \"args\": {\"url\": \"https://a.test/\"}}\n```",
        ),
        openai_text(r#"{"tool_name": "browser_get_text", "tool_args": {}}"#),
        openai_text(
            r#"{"action": "next_step", "step": {"name": "save_note", "arguments": {"content": "the page says hello"}}}"#,
        ),
        openai_text(r#"{"action": "respond", "response": "read the page and noted it"}"#),
    ];
    let (d, llm) = json_daemon(&dir, script);
    let worker = ok_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "read it"}));
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(s["summary"], "read the page and noted it");
    let names: Vec<String> = actions(&worker).into_iter().map(|(a, _)| a).collect();
    assert_eq!(names, ["browser_navigate", "browser_navigate", "browser_get_text"], "the opening, then the model's");
    assert_eq!(c.get(&format!("/sessions/{id}/notes")).json()[0]["content"], "the page says hello");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 4);
    for r in &reqs {
        assert!(r.body.get("tools").is_none(), "JSON mode sends no tools");
        assert_eq!(r.body["response_format"], json!({"type": "json_object"}), "the reply is kept to JSON");
    }
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("## Tools") && system.contains("- browser_navigate:"), "{system}");
    let second = reqs[1].body["messages"].to_string();
    assert!(second.contains("Result of browser_navigate"), "{second}");
    assert_eq!(s["guards_fired"]["loose_actions"], 3, "the fenced reply is the asked shape: {s}");
}

/// With `loose_actions` off, only the asked shape is an action: an alias gets the one
/// correction round, and the exact reply after it runs.
#[test]
fn json_mode_off_the_loose_unit_corrects_another_shape() {
    let dir = TempDir::new("json-exact");
    let script = vec![
        openai_text(r#"{"tool_name": "browser_get_text", "tool_args": {}}"#),
        openai_text(r#"{"action": "next_step", "tool": "browser_get_text", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "read it"}"#),
    ];
    let (d, llm) = json_daemon(&dir, script);
    let worker = ok_worker(&d);
    let c = d.client();
    let body = json!({"mode": "task", "target": "https://a.test/", "instruction": "read it",
        "options": {"profile": "small", "guards": {"loose_actions": false}}});
    let id = create_session(&c, body);
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert!(s["guards_fired"].get("loose_actions").is_none(), "{s}");
    let retry = llm.requests()[1].body["messages"].to_string();
    assert!(retry.contains("could not be used: no `action`"), "{retry}");
    let names: Vec<String> = actions(&worker).into_iter().map(|(a, _)| a).collect();
    assert_eq!(names, ["browser_navigate", "browser_get_text"], "{names:?}");
}

#[test]
fn json_mode_corrects_one_bad_reply_and_takes_two_as_words() {
    let dir = TempDir::new("json-bad");
    let script = vec![
        openai_text("I will open the page now."),
        openai_text(r#"{"action": "complete", "message": "nothing to do"}"#),
        openai_text("Let me think about it."),
        openai_text(r#"{"action": "next_step", "tool": "teleport", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "nudged, done"}"#),
    ];
    let (d, llm) = json_daemon(&dir, script);
    let _worker = ok_worker(&d);
    let c = d.client();
    let first = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "one"}));
    let s = ended(&c, &first);
    assert_eq!(s["status"], "finished", "{s}");
    let retry = llm.requests()[1].body["messages"].to_string();
    assert!(retry.contains("could not be used: the reply is not a JSON object"), "{retry}");
    assert_eq!(s["guards_fired"]["json_correction"], 1, "the round is the unit's event: {s}");
    // Two bad replies in a row are the model's words: the session nudges, as for a native
    // model's text, instead of ending on them.
    let second = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "two"}));
    let s = ended(&c, &second);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(s["summary"], "nudged, done");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 5, "no loop");
    let nudged = reqs[4].body["messages"].to_string();
    assert!(nudged.contains("Continue with the tools") && nudged.contains("teleport"), "{nudged}");
    assert_eq!(s["guards_fired"]["json_correction"], 1, "{s}");
}

/// `json_correction` on a case it was not written for: a capable model's (`full`) call of a
/// tool it was not offered gets the round too; switched off, the reply is words at once.
#[test]
fn guard_json_correction_serves_every_profile_and_off_a_bad_reply_is_words_at_once() {
    let dir = TempDir::new("json-correction");
    let script = vec![
        openai_text(r#"{"action": "next_step", "tool": "browser_teleport", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "corrected"}"#),
        openai_text(r#"{"action": "next_step", "tool": "browser_teleport", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "nudged instead"}"#),
    ];
    let (d, llm) = json_daemon(&dir, script);
    let _worker = ok_worker(&d);
    let c = d.client();
    let full =
        json!({"mode": "task", "target": "https://a.test/", "instruction": "one", "options": {"profile": "full"}});
    let s = ended(&c, &create_session(&c, full));
    assert_eq!((s["status"].as_str(), s["summary"].as_str()), (Some("finished"), Some("corrected")), "{s}");
    assert_eq!(s["guards_fired"]["json_correction"], 1, "{s}");
    let retry = llm.requests()[1].body["messages"].to_string();
    assert!(retry.contains("could not be used") && retry.contains("browser_teleport"), "{retry}");
    let off = json!({"mode": "task", "target": "https://a.test/", "instruction": "two",
        "options": {"profile": "full", "guards": {"json_correction": false}}});
    let s = ended(&c, &create_session(&c, off));
    assert_eq!(s["summary"], "nudged instead", "{s}");
    assert!(s["guards_fired"].get("json_correction").is_none(), "{s}");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 4, "no round of its own: the bad reply, then the nudge's");
    let nudged = reqs[3].body["messages"].to_string();
    assert!(!nudged.contains("could not be used") && nudged.contains("Continue with the tools"), "{nudged}");
}

/// A server that refuses `response_format` is asked again without it, and not asked again.
#[test]
fn json_mode_asks_without_a_json_format_where_the_server_refuses_it() {
    let dir = TempDir::new("json-format");
    let script = vec![
        Step::error(400, "invalid_request_error", "response_format is not supported by this model"),
        openai_text(r#"{"action": "next_step", "tool": "browser_get_text", "args": {}}"#),
        openai_text(r#"{"action": "complete", "message": "read it"}"#),
    ];
    let (d, llm) = json_daemon(&dir, script);
    let _worker = ok_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://a.test/", "instruction": "read"}));
    assert_eq!(ended(&c, &id)["status"], "finished");
    let formats: Vec<bool> = llm.requests().iter().map(|r| r.body.get("response_format").is_some()).collect();
    assert_eq!(formats, [true, false, false]);
}

#[test]
fn named_endpoints_and_unknown_names() {
    let dir = TempDir::new("named-llm");
    let local = ScriptedLlm::start_wire(
        Wire::OpenAi,
        "",
        vec![openai_tools(None, &[("finish_task", json!({"summary": "local ok"}))])],
    );
    let mut config = test_config(dir.path());
    config.api.api_key = agent_controller::util::secret::Secret::new("sk-ant-unused");
    let endpoint = agent_controller::config::ProviderConfig {
        provider: "openai".into(),
        base_url: local.url.clone(),
        model: "qwen2.5-coder:7b".into(),
        max_tokens: Some(512),
        ..Default::default()
    };
    config.providers.insert("local".into(), endpoint);
    let agent = agent_controller::agent::llm_agent(&config);
    let d = TestDaemon::start(config, agent);
    let _worker = ok_worker(&d);
    let c = d.client();
    let r =
        c.post("/sessions", &json!({"mode": "task", "target": "https://a.test/", "instruction": "x", "llm": "nope"}));
    assert_error(&r, 400, "bad_request");
    assert!(r.text().contains("api, local"), "{}", r.text());
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://a.test/", "instruction": "x", "llm": "local", "model": "llama3.2"}),
    );
    let s = ended(&c, &id);
    assert_eq!(s["status"], "finished", "{s}");
    assert_eq!(s["llm"], json!({"name": "local", "provider": "openai", "model": "llama3.2"}));
    let reqs = local.requests();
    assert_eq!(reqs[0].body["model"], "llama3.2");
    assert_eq!(reqs[0].body["max_tokens"], 512, "the endpoint's own budget, not api's");
    assert_eq!(reqs[0].header("authorization"), None, "a local server gets no key");
    local.assert_well_formed();
}

/// An endpoint answering a 5 MB JSON error: its message is cut where it is read, so the
/// session's `error` (on `GET /sessions/ID` and in `session.json`), its log and its report stay
/// small, and say how long the message was.
#[test]
fn a_huge_error_message_from_the_endpoint_is_bounded() {
    let dir = TempDir::new("huge-error");
    let message = "no ".repeat(1_700_000);
    let (d, _llm) = llm_daemon(dir.path(), vec![Step::error(400, "invalid_request_error", &message)], |_| {});
    let _w = ok_worker(&d);
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://x.test", "instruction": "i"}));
    let s = ended(&c, &id);
    assert_eq!(s["status"], "error", "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("Anthropic API 400 invalid_request_error: no no"), "{error}");
    assert!(error.len() < 2_100 && error.ends_with("characters in all]"), "{} bytes", error.len());
    let folder = dir.path().join(&id);
    let on_disk = std::fs::metadata(folder.join("session.json")).unwrap().len();
    assert!(on_disk < 20_000, "session.json is {on_disk} bytes");
    assert!(c.get(&format!("/sessions/{id}")).body.len() < 20_000);
    for file in ["log.jsonl", "report.md"] {
        let size = std::fs::metadata(folder.join(file)).unwrap().len();
        assert!(size < 50_000, "{file} is {size} bytes");
    }
}

/// JSON mode on an endpoint that enforces a reply schema: every request keeps the reply to the
/// turn's actions, a click to the refs of the page the model saw, a select's value to its
/// options; the prompt (and so its prefix) is the same each turn.
#[test]
fn json_mode_keeps_the_reply_to_the_page_where_the_server_enforces_a_schema() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    let dir = TempDir::new("json-schema");
    let script = vec![
        openai_text(
            r#"{"action": "next_step", "thinking": {"observation": "a form", "plan": "pick green"}, "tool": "browser_select_option", "tool_args": {"selector": "ref=e2", "value": "Green=g"}}"#,
        ),
        openai_text(
            r#"{"action": "complete", "message": "chose green", "thinking": {"observation": "done", "plan": "end"}}"#,
        ),
    ];
    let (d, llm) = wire_daemon(dir.path(), Wire::OpenAi, script, |c| {
        c.api.tool_mode = "json".into();
        c.api.reply_schema = agent_controller::config::Vision::On;
    });
    let _worker = RealWorker::start(&d, "schema-box", "browser");
    let c = d.client();
    let target = format!("{}/form", site.url);
    let id = create_session(&c, json!({"mode": "task", "target": target, "instruction": "Choose green"}));
    assert_eq!(ended(&c, &id)["status"], "finished");
    let reqs = llm.requests();
    let format = &reqs[0].body["response_format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    assert_eq!(format["json_schema"]["name"], "action");
    let branches = format["json_schema"]["schema"]["anyOf"].as_array().unwrap();
    let branch = |tool: &str| {
        branches.iter().find(|b| b["properties"]["tool"]["const"] == tool).cloned().unwrap_or_else(|| panic!("{tool}"))
    };
    // The click's refs are the page's, as the model saw them in the opening.
    let page = reqs[0].body["messages"].to_string();
    let refs = branch("browser_click")["properties"]["tool_args"]["properties"]["selector"]["enum"].clone();
    let refs: Vec<&str> = refs.as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(refs.len() >= 4, "{refs:?}");
    assert!(refs.iter().all(|r| page.contains(&format!("[{}]", &r[4..]))), "{refs:?} on {page}");
    let select = branch("browser_select_option")["properties"]["tool_args"]["anyOf"][0].clone();
    assert_eq!(select["properties"]["value"]["enum"], json!(["Red=r", "Green=g"]), "{select}");
    // The pick ran, and the prompt is the same on both turns.
    let second = reqs[1].body["messages"].to_string();
    assert!(second.contains("Result of browser_select_option") && !second.contains("Error from"), "{second}");
    let system = |i: usize| reqs[i].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert_eq!(system(0), system(1));
    assert!(system(0).contains("\"tool_args\""), "the prompt shows the shape the schema holds");
}

/// `reply_schema` with native tool calls (issue 64 item 1): each request's tools are the turn's,
/// narrowed to the page the model saw, a click's selector an enum of its refs, in both native
/// formats; the tool list is what changes from turn to turn.
#[test]
fn native_tool_calls_name_the_pages_refs_where_replies_are_kept_to_the_page() {
    if !have_chromium() {
        return;
    }
    let site = Site::start();
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let dir = TempDir::new("native-choices");
        let script = vec![
            wire.tool("browser_click", json!({"selector": "ref=e2"})),
            wire.tool("finish_task", json!({"summary": "clicked"})),
        ];
        let (d, llm) = wire_daemon(dir.path(), wire, script, |c| {
            c.api.tool_mode = "native".into();
            c.api.reply_schema = agent_controller::config::Vision::On;
        });
        let _worker = RealWorker::start(&d, "native-choices-box", "browser");
        let c = d.client();
        let id =
            create_session(&c, json!({"mode": "task", "target": format!("{}/form", site.url), "instruction": "Click"}));
        ended(&c, &id);
        let reqs = llm.requests();
        let tool = |i: usize, name: &str| {
            let tools = reqs[i].body["tools"].as_array().cloned().unwrap_or_default();
            tools
                .into_iter()
                .find(|t| t["name"] == name || t["function"]["name"] == name)
                .unwrap_or_else(|| panic!("{wire:?}: no {name} in request {i}"))
        };
        let click = tool(0, "browser_click");
        let schema = if wire == Wire::OpenAi { &click["function"]["parameters"] } else { &click["input_schema"] };
        let refs = schema["properties"]["selector"]["enum"].as_array().cloned().unwrap_or_default();
        assert!(refs.len() >= 4, "{wire:?}: {schema}");
        let page = reqs[0].body["messages"].to_string();
        assert!(refs.iter().all(|r| page.contains(&format!("[{}]", &r.as_str().unwrap()[4..]))), "{refs:?}");
        let navigate = tool(0, "browser_navigate");
        assert!(navigate.to_string().contains("url"), "a tool without an element argument goes as it is");
    }
}

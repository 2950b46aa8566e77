//! Stored tool outputs through the real daemon and agent: a 200 kB JSON result is stored under
//! the session's `tool_outputs/`, the model gets its description, and the five tools (added to
//! the session at that moment) list, describe, extract by JSONPath, count and sample it. A
//! worker's error of 300 kB is cut to the same bound before the model sees it.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};

/// A result as JSON: what the target gave comes between the boundary's markers, what the
/// controller says about it (the stored output's description, the list) does not.
fn result_json(req: &Recorded) -> Value {
    let text = req.last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
    let text = if text.starts_with("<<") { req.inside_markers(&text) } else { text };
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_large_json_output_is_stored_and_traversed() {
    let id_of = "out_001_browser_scrape_links";
    let script = vec![
        tool("browser_scrape_links", json!({})),
        tool("tool_outputs_list", json!({})),
        tool("tool_outputs_stats", json!({"id": id_of})),
        tool("tool_outputs_extract", json!({"id": id_of, "path": "$.links[?@.text == 'Report 1234'].url"})),
        tool("tool_outputs_count", json!({"id": id_of, "path": "$.links[*]"})),
        tool("tool_outputs_sample", json!({"id": id_of, "path": "$.links", "n": 3})),
        tool("tool_outputs_extract", json!({"id": "out_999_nothing", "path": "$"})),
        tool("finish_task", json!({"summary": "found report 1234"})),
    ];
    let dir = TempDir::new("outputs");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = ScriptedWorker::start(&d.worker_client(), "out-box", &["browser"], false, |cmd| {
        if cmd["action"] == "browser_navigate" {
            return json!({"success": true, "data": {"url": "https://reports.test/", "title": "Reports"}});
        }
        let links: Vec<Value> = (0..3000)
            .map(|i| json!({"text": format!("Report {i}"), "url": format!("https://reports.test/files/report-{i:05}.pdf")}))
            .collect();
        json!({"success": true, "data": {"count": 3000, "links": links}})
    });
    let c = d.client();
    let id = create_session(&c, json!({"mode": "task", "target": "https://reports.test/", "instruction": "find 1234"}));
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["summary"], "found report 1234");
    llm.assert_well_formed();
    let reqs = llm.requests();
    // The controller's words are a JSON line; the output's preview and shape (its keys and
    // paths are the target's) follow between the markers.
    let described = reqs[1].last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
    let (said, rest) = described.split_once("\nPreview:\n").unwrap_or_else(|| panic!("{described}"));
    let (preview, shape) = rest.split_once("\nShape:\n").unwrap_or_else(|| panic!("{described}"));
    let stored: Value = serde_json::from_str(said).unwrap();
    assert_eq!(stored["persisted"], true);
    assert_eq!(stored["id"], id_of);
    assert!(stored["size_chars"].as_u64().unwrap() > 200_000, "{stored}");
    assert!(reqs[1].inside_markers(preview).len() <= 1500 * 4);
    assert!(!said.contains("$.links"), "an example path is the output's: {said}");
    assert!(reqs[5].last_results()[0]["content"][0]["text"].as_str().unwrap().starts_with("<<page "));
    let stats: Value = serde_json::from_str(&reqs[1].inside_markers(shape)).unwrap();
    assert_eq!(stats["keys"]["links"], "array[3000] of objects {text, url}");
    assert_eq!(stats["example_paths"][0], "$.links[*].text");
    assert_eq!(stored["available_tools"][2], "tool_outputs_extract");
    assert!(reqs[1].body.to_string().len() < 40_000, "the context got the description, not the output");
    // The tools appear once something is stored.
    assert!(!reqs[0].tool_names().contains(&"tool_outputs_list".to_string()));
    assert!(reqs[1].tool_names().contains(&"tool_outputs_sample".to_string()));
    let on_disk = std::fs::read_to_string(dir.path().join(&id).join(format!("tool_outputs/{id_of}.txt"))).unwrap();
    assert!(on_disk.len() > 200_000);

    assert_eq!(result_json(&reqs[2])["outputs"][0]["kind"], "json");
    assert_eq!(result_json(&reqs[3])["example_paths"][0], "$.links[*].text");
    let found = result_json(&reqs[4]);
    assert_eq!(found["items"], json!(["https://reports.test/files/report-01234.pdf"]), "{found}");
    assert_eq!(result_json(&reqs[5])["count"], 3000);
    let sampled = result_json(&reqs[6]);
    assert_eq!(sampled["items"].as_array().unwrap().len(), 3);
    assert_eq!(sampled["items"][1]["text"], "Report 1000");
    let missing = &reqs[7].last_results()[0];
    assert_eq!(missing["is_error"], true);
    assert!(missing["content"][0]["text"].as_str().unwrap().contains(id_of), "names what is stored: {missing}");
}

/// Issue 65: a worker error quoting a huge page rode along, whole, in every later request.
#[test]
fn a_huge_tool_error_is_cut_to_the_output_bound_before_the_model_sees_it() {
    const MAX: usize = 5000;
    let password = "hunter2-secret-pw";
    let script = vec![
        tool("browser_click", json!({"selector": "#go"})),
        tool("browser_snapshot", json!({})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let dir = TempDir::new("huge-error");
    let (d, llm) = llm_daemon(dir.path(), script, |c| c.agent.max_tool_output_chars = MAX);
    // The password straddles the cut: scrubbed before the cut, not a prefix of it left over.
    let huge = format!("{}{password}{}", "é".repeat(MAX - 6), "x".repeat(300_000));
    let _worker = ScriptedWorker::start(&d.worker_client(), "err-box", &["browser"], false, move |cmd| {
        match cmd["action"].as_str() {
            Some("browser_click") => json!({"success": false, "error": huge}),
            _ => json!({"success": true, "data": {"url": "https://big.test/", "title": "Big"}}),
        }
    });
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://big.test/", "instruction": "click",
            "credentials": {"username": "bob", "password": password, "login_url": "https://big.test/login"}}),
    );
    wait_status(&c, &id, "finished");
    let reqs = llm.requests();
    let error = &reqs[1].last_results()[0];
    assert_eq!(error["is_error"], true, "{error}");
    let text = reqs[1].inside_markers(error["content"][0]["text"].as_str().unwrap());
    assert!(text.chars().count() <= MAX + 100, "{} characters", text.chars().count());
    assert!(text.ends_with("characters in all]"), "says how long it was: …{}", &text[text.len() - 80..]);
    assert!(!text.contains("hunter"), "no part of the password");
    for later in &reqs[1..] {
        assert!(later.body.to_string().len() < 40_000, "{} bytes", later.body.to_string().len());
    }
}

/// Issue 65: a result of many small objects (over a MiB) stays text until a query needs its
/// tree: described by its shape, scrubbed of a secret the page echoed inside it, stored as the
/// JSON it is, and still traversed by JSONPath.
#[test]
fn a_large_result_of_small_objects_is_kept_as_text_scrubbed_and_traversed() {
    let id_of = "out_001_browser_scrape_links";
    let password = "hunter2-secret-pw";
    let script = vec![
        tool("browser_scrape_links", json!({})),
        tool("tool_outputs_extract", json!({"id": id_of, "path": "$.items[?@.id == 70001].v"})),
        tool("finish_task", json!({"summary": "done"})),
    ];
    let dir = TempDir::new("small-objects");
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _worker = ScriptedWorker::start(&d.worker_client(), "small-box", &["browser"], false, move |cmd| {
        if cmd["action"] != "browser_scrape_links" {
            return json!({"success": true, "data": {"url": "https://items.test/", "title": "Items"}});
        }
        let items: Vec<Value> = (0..80_000)
            .map(|i| json!({"id": i, "v": if i == 70_001 { format!("echo {password}") } else { format!("v{i}") }}))
            .collect();
        json!({"success": true, "data": {"count": 80_000, "items": items, "truncated": false}})
    });
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://items.test/", "instruction": "list the items",
            "credentials": {"username": "bob", "password": password, "login_url": "https://items.test/login"}}),
    );
    wait_status(&c, &id, "finished");
    let reqs = llm.requests();
    let described = reqs[1].last_results()[0]["content"][0]["text"].as_str().unwrap().to_string();
    let (_, shape) = described.split_once("\nShape:\n").unwrap_or_else(|| panic!("{described}"));
    let stats: Value = serde_json::from_str(&reqs[1].inside_markers(shape)).unwrap();
    assert_eq!(stats["keys"]["items"], "array[80000] of objects {id, v}", "{stats}");
    assert_eq!(stats["keys"]["truncated"], "boolean");
    let on_disk = std::fs::read_to_string(dir.path().join(&id).join(format!("tool_outputs/{id_of}.txt"))).unwrap();
    assert!(!on_disk.contains("hunter2"), "the secret is scrubbed from the kept text");
    let stored: Value = serde_json::from_str(&on_disk).expect("the stored output is the result's JSON");
    assert_eq!(stored["items"].as_array().map(Vec::len), Some(80_000));
    assert_eq!(stored["count"], 80_000);
    let found = result_json(&reqs[2]);
    assert_eq!(found["items"], json!(["echo [redacted]"]), "{found}");
    for req in &reqs {
        assert!(!req.body.to_string().contains("hunter2"));
    }
}

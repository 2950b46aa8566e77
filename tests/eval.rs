//! `agent-controller eval` itself, as a user runs it: the real binary with its own daemon, site
//! and agent-worker (real Chromium), against a scripted model. The model's script passes two
//! tasks (an answer saved, a form sent through the real browser) and fails one (it finishes
//! without the file), so the judge is seen to look at the disk and the site, not the words.

use crate::support::llm::*;
use crate::support::worker::have_chromium;
use crate::support::*;
use serde_json::{Value, json};
use std::process::Command;

fn config_for(llm: &ScriptedLlm, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("config.yaml");
    let yaml = format!(
        "api:\n  provider: anthropic\n  base_url: \"{}\"\n  api_key: sk-test-key-123\n  max_retries: 1\n",
        llm.url
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn the_eval_judges_sessions_by_what_reached_the_disk_and_the_site() {
    if !have_chromium() {
        return;
    }
    let fields = json!([
        {"selector": "#name", "value": "Ada Lovelace"},
        {"selector": "#email", "value": "ada@example.com"},
        {"selector": "#message", "value": "Please call me back."}
    ]);
    let script = vec![
        // price: the pricing page opened, the answer saved, then finished.
        tool("browser_click", json!({"selector": "text=Pricing"})),
        tool("save_file", json!({"filename": "answer.txt", "content": "$45"})),
        tool("finish_task", json!({"summary": "The Team plan costs $45 per month."})),
        // contact-form: filled and sent in the real browser.
        tool("browser_fill_form", json!({"fields": fields})),
        tool("browser_click", json!({"selector": "text=Send message"})),
        tool("finish_task", json!({"summary": "Sent."})),
        // staff-csv: claims success without saving anything.
        tool("finish_task", json!({"summary": "Saved staff.csv."})),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("eval");
    let config = config_for(&llm, dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
        .args(["eval", "--config"])
        .arg(&config)
        .args(["--tasks", "price,contact-form,staff-csv", "--max-turns", "6", "--json"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let rows = report["rows"].as_array().unwrap();
    let row = |task: &str| rows.iter().find(|r| r["task"] == task).unwrap().clone();
    assert_eq!(row("price")["pass"], true, "{report}");
    assert_eq!(row("contact-form")["pass"], true, "the form reached the site: {report}");
    let staff = row("staff-csv");
    assert_eq!(staff["pass"], false, "a summary is not a file: {report}");
    assert!(staff["why"].as_str().unwrap().contains("no file named staff"), "{staff}");
    assert_eq!((report["passed"].clone(), report["runs"].clone()), (json!(2), json!(3)));
    assert_eq!(row("price")["turns"], 3);
    assert_eq!(row("price")["first_request_tokens"], 150, "the scripted usage of the first call, cache reads included");
    assert!(row("contact-form")["input_tokens"].as_u64().unwrap() >= 300, "{report}");

    // Below --min-pass the exit code says so; an unknown task is a usage error.
    let llm2 = ScriptedLlm::start(vec![tool("finish_task", json!({"summary": "done"}))]);
    let config2 = config_for(&llm2, &dir.path().join(""));
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
        .args(["eval", "--config"])
        .arg(&config2)
        .args(["--tasks", "head-office", "--min-pass", "50"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("head-office") && text.contains("FAIL") && text.contains("passed 0/1"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_agent-controller")).args(["eval", "--tasks", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no eval task \"nope\""));
}

/// `agent-controller probe` asks the endpoint its three questions, keeps the answers for
/// `config check` and `tool_mode: auto`; a session on an endpoint probed as JSON-only then
/// speaks JSON actions (no native tools in its requests).
#[test]
fn probe_finds_what_an_endpoint_can_do_and_auto_uses_it() {
    let script = vec![
        tool("get_weather", json!({"city": "Paris"})),
        text(r#"{"action": "next_step", "tool": "get_weather", "args": {"city": "Paris"}}"#),
        text("Red."),
    ];
    let llm = ScriptedLlm::start(script);
    let dir = TempDir::new("probe");
    let config = config_for(&llm, dir.path());
    let yaml = std::fs::read_to_string(&config).unwrap()
        + &format!("output:\n  dir: \"{}\"\n", dir.path().join("out").display());
    std::fs::write(&config, yaml).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_agent-controller"))
            .args(args)
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string())
    };
    let (code, printed) = run(&["probe", "--json"]);
    assert_eq!(code, Some(0), "{printed}");
    let found: Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(
        (found["native_tools"].clone(), found["json_mode"].clone(), found["vision"].clone()),
        (json!(true), json!(true), json!(true)),
        "{found}"
    );
    assert_eq!(found["context_tokens"], Value::Null, "the scripted server reports no context length");
    let reqs = llm.requests();
    assert_eq!(reqs[0].tool_names(), ["get_weather"]);
    assert!(reqs[1].body.get("tools").is_none(), "JSON mode lists the tool in the prompt");
    assert_eq!(reqs[2].image_count(), 1);
    let (_, check) = run(&["config", "check"]);
    assert!(check.contains("probed: native tools yes, JSON mode yes, images yes, context unknown tokens"), "{check}");

    // Probed as JSON-only: `tool_mode: auto` sessions speak JSON actions.
    let out = dir.path().join("out2");
    std::fs::create_dir_all(&out).unwrap();
    let (d, llm2) = llm_daemon(&out, vec![text(r#"{"action": "complete", "message": "done"}"#)], |c| {
        c.api.tool_mode = "auto".into();
    });
    let endpoint = json!({"base_url": llm2.url, "model": "claude-sonnet-4-6", "native_tools": false, "json_mode": true, "vision": false});
    std::fs::write(out.join("probes.json"), json!({"api": endpoint}).to_string()).unwrap();
    let _worker = ScriptedWorker::start(
        &d.worker_client(),
        "auto-box",
        &["shell"],
        false,
        |_| json!({"success": true, "data": {}}),
    );
    let id =
        create_session(&d.client(), json!({"mode": "task", "type": "shell", "target": "auto-box", "instruction": "x"}));
    let s = wait_status(&d.client(), &id, "finished");
    assert_eq!(s["summary"], "done");
    assert!(llm2.requests()[0].body.get("tools").is_none(), "JSON mode: {}", llm2.requests()[0].body);
}

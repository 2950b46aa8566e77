//! Budgets: a session that spends its tokens or its seconds gets one wrap-up call offering
//! only the tools that deliver, then ends `finished` with `ended_by: budget`; limits that
//! cannot work are 400s; `/metrics` counts the sessions a budget ended.

use crate::support::llm::*;
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn worker(d: &TestDaemon) -> ScriptedWorker {
    ScriptedWorker::start(
        &d.worker_client(),
        "budget",
        &["browser"],
        true,
        |cmd| json!({"success": true, "data": {"ok": true, "action": cmd["action"], "params": cmd["params"]}}),
    )
}

/// A model that looks at the page forever (each answer differs, so no loop guard trips).
fn looking(n: usize, delay: Duration) -> Vec<Step> {
    (0..n).map(|i| tool("browser_scroll", json!({"direction": "down", "amount": 100 + i})).delayed(delay)).collect()
}

#[test]
fn a_token_budget_ends_the_session_after_one_wrap_up_call() {
    let dir = TempDir::new("budget-tokens");
    // Each scripted reply counts 100 in + 20 out + 50 cache reads at a tenth = 125 tokens.
    let mut script = looking(3, Duration::ZERO);
    script.push(tool("save_file", json!({"filename": "answer.txt", "content": "what I found"})));
    script.extend(looking(5, Duration::ZERO));
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _w = worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "find it",
               "options": {"budget": {"tokens": 300}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["ended_by"], "budget", "{s}");
    assert_eq!(s["budget"]["exceeded"], "tokens");
    assert_eq!(s["budget"]["limit"]["tokens"], 300);
    assert_eq!(s["budget"]["spent"]["tokens"], 500, "4 calls of 125");
    let requests = llm.requests();
    assert_eq!(requests.len(), 4, "three calls reach the limit, then one wrap-up call");
    let wrap_up = &requests[3];
    let offered = wrap_up.tool_names();
    let has = |t: &str| offered.iter().any(|o| o == t);
    assert!(has("save_file") && has("finish_task") && !has("browser_scroll"), "{offered:?}");
    assert!(all_text(&wrap_up.body).contains("token budget is spent"));
    assert!(s["summary"].as_str().unwrap().contains("Ended by its token budget: spent 500 tokens of 300"), "{s}");
    let report = c.get(&format!("/sessions/{id}/report")).json()["report"].as_str().unwrap().to_string();
    assert!(report.contains("token budget"), "{report}");
    assert!(dir.path().join(&id).join("files/answer.txt").exists(), "the wrap-up call delivered");
    let metrics = c.get("/metrics").text();
    assert!(metrics.contains("agent_controller_sessions_ended_by_budget_total 1"), "{metrics}");
    // The console shows spent beside the limit.
    let out = std::process::Command::new(binary())
        .args(["status", &id])
        .env("AGENT_CONTROLLER_API", &d.api)
        .env_remove("AGENT_CONTROLLER_TOKEN")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("budget: 500/300 tokens (tokens reached)"), "{shown}");
}

fn all_text(body: &Value) -> String {
    body.to_string()
}

#[test]
fn a_seconds_budget_counts_wall_time_and_ends_within_one_call() {
    let dir = TempDir::new("budget-seconds");
    let (d, llm) = llm_daemon(dir.path(), looking(20, Duration::from_millis(600)), |_| {});
    let _w = worker(&d);
    let c = d.client();
    let t = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "look",
               "options": {"budget": {"seconds": 2}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!((s["ended_by"].as_str(), s["budget"]["exceeded"].as_str()), (Some("budget"), Some("seconds")));
    assert!(s["budget"]["spent"]["seconds"].as_u64().unwrap() >= 2);
    let n = llm.requests().len();
    assert!((4..=6).contains(&n), "{n} model calls in about 2 s of 0.6 s calls, plus the wrap-up");
}

#[test]
fn a_seconds_budget_includes_the_wait_for_a_worker() {
    let dir = TempDir::new("budget-lease");
    let (d, llm) = llm_daemon(dir.path(), looking(2, Duration::ZERO), |_| {});
    let c = d.client();
    let t = Instant::now();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "look",
               "options": {"budget": {"seconds": 1}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_eq!(s["ended_by"], "budget");
    assert!(s["summary"].as_str().unwrap().contains("No worker"), "{s}");
    assert_eq!(llm.requests().len(), 0);
}

#[test]
fn budgets_that_cannot_work_are_refused() {
    let dir = TempDir::new("budget-refused");
    let (d, _llm) = llm_daemon(dir.path(), vec![], |c| {
        c.api.model = "a-local-model".into();
        c.agent.budget.seconds = Some(600);
    });
    let c = d.client();
    let create = |budget: Value| {
        c.post(
            "/sessions",
            &json!({"mode": "task", "target": "https://x.test", "instruction": "i", "options": {"budget": budget}}),
        )
    };
    for bad in
        [json!({"tokens": 0}), json!({"tokens": -5}), json!({"seconds": 0}), json!({"usd": -1}), json!({"usd": 0})]
    {
        assert_error(&create(bad), 400, "bad_request");
    }
    assert_error(&create(json!({"dollars": 1})), 400, "bad_request");
    // No price for this model: a dollar budget names the key to set.
    let r = create(json!({"usd": 0.5}));
    assert_error(&r, 400, "bad_request");
    assert!(r.json()["error"].as_str().unwrap().contains("api.price"), "{}", r.text());
    // A token budget works, and the config's default seconds join it.
    let r = create(json!({"tokens": 1000}));
    assert_eq!(r.status, 201, "{}", r.text());
    let s = c.get(&format!("/sessions/{}", r.json()["session_id"].as_str().unwrap())).json();
    assert_eq!(s["budget"]["limit"], json!({"tokens": 1000, "seconds": 600}));
    assert!(s["budget"]["spent"].get("usd").is_none(), "no price, no dollars");
}

#[test]
fn a_dollar_budget_uses_the_configured_price() {
    let dir = TempDir::new("budget-usd");
    let mut script = looking(6, Duration::ZERO);
    script.insert(0, tool("browser_snapshot", json!({})));
    let (d, llm) = llm_daemon(dir.path(), script, |c| {
        c.api.price = Some(agent_controller::config::Price {
            input_per_mtok: 1000.0,
            output_per_mtok: 5000.0,
            cache_read_per_mtok: Some(100.0),
        });
    });
    let _w = worker(&d);
    let c = d.client();
    // A call costs 100 × 1000 + 20 × 5000 + 50 × 100 = 205 000 per million: $0.205.
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "i", "options": {"budget": {"usd": 0.4}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!(s["budget"]["exceeded"], "usd", "{s}");
    assert!((s["budget"]["spent"]["usd"].as_f64().unwrap() - 0.615).abs() < 1e-6, "{s}");
    assert_eq!(llm.requests().len(), 3);
}

/// `step` with the usage a provider reports for it.
fn reporting(mut step: Step, usage: Value) -> Step {
    step.body["usage"] = usage;
    step
}

/// Tokens as the budget counts them, from the record's `usage` (every scripted call reads 50
/// from the cache, a whole tenth).
fn weighted(u: &Value) -> u64 {
    let n = |k: &str| u[k].as_u64().unwrap();
    n("input_tokens") + n("output_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens") / 10
}

/// The input tokens `/metrics` shows for the default endpoint.
fn metric_input_tokens(c: &Client) -> u64 {
    let metrics = c.get("/metrics").text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("agent_controller_llm_tokens_total{") && l.contains("kind=\"input\""))
        .unwrap_or_else(|| panic!("{metrics}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A provider reporting `u64::MAX` input tokens: each call counts at most the per-call cap, the
/// sums never wrap (a debug build would panic), and the budget ends the session.
#[test]
fn a_provider_reporting_u64_max_tokens_is_capped_and_ends_the_session_by_budget() {
    let dir = TempDir::new("budget-huge-usage");
    let huge = json!({"input_tokens": u64::MAX, "output_tokens": 20, "cache_read_input_tokens": 50});
    let mut script = looking(1, Duration::ZERO);
    script.push(tool("save_file", json!({"filename": "answer.txt", "content": "what I found"})));
    script.extend(looking(3, Duration::ZERO));
    let script = script.into_iter().map(|s| reporting(s, huge.clone())).collect();
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _w = worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "find it",
               "options": {"budget": {"tokens": 1000}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!((s["ended_by"].as_str(), s["budget"]["exceeded"].as_str()), (Some("budget"), Some("tokens")), "{s}");
    assert_eq!(llm.requests().len(), 2, "the first call spends the budget, then the wrap-up call");
    let cap = agent_controller::llm::MAX_CALL_TOKENS;
    assert_eq!(s["usage"]["input_tokens"], 2 * cap, "{s}");
    assert_eq!(s["budget"]["spent"]["tokens"], 2 * (cap + 20 + 5), "{s}");
    assert_eq!(metric_input_tokens(&c), 2 * cap);
    assert_eq!(c.get("/health").status, 200);
}

/// The compaction's summary call counts like any other: its 50 000 tokens trip a 30 000-token
/// budget, and `usage`, the budget and `/metrics` agree on every call.
#[test]
fn a_compaction_call_counts_against_the_budget() {
    let dir = TempDir::new("budget-compaction");
    let summary = reporting(
        text("Scrolled down three times; nothing found yet."),
        json!({"input_tokens": 50_000, "output_tokens": 20, "cache_read_input_tokens": 50}),
    );
    let mut script = looking(3, Duration::ZERO);
    script.push(tool("save_file", json!({"filename": "answer.txt", "content": "what I found"})));
    script.extend(looking(6, Duration::ZERO));
    let llm = ScriptedLlm::start_full(crate::support::wire::Wire::Anthropic, "", script, Some(summary));
    let mut config = test_config(dir.path());
    config.api.base_url = llm.url.clone();
    config.api.api_key = agent_controller::util::secret::Secret::new("sk-test-key-123");
    config.agent.compact_at_tokens = 1500;
    config.agent.keep_recent_steps = 1;
    let d = TestDaemon::start(config.clone(), agent_controller::agent::llm_agent(&config));
    let _w = worker(&d);
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "task", "target": "https://x.test", "instruction": "find it",
               "options": {"budget": {"tokens": 30000}}}),
    );
    let s = wait_status(&c, &id, "finished");
    let log = c.get(&format!("/sessions/{id}/log")).json().to_string();
    assert!(log.contains("context compacted"), "{log}");
    assert_eq!((s["ended_by"].as_str(), s["budget"]["exceeded"].as_str()), (Some("budget"), Some("tokens")), "{s}");
    let input = s["usage"]["input_tokens"].as_u64().unwrap();
    assert!(input >= 50_000, "{s}");
    assert_eq!(s["budget"]["spent"]["tokens"].as_u64().unwrap(), weighted(&s["usage"]), "{s}");
    assert_eq!(metric_input_tokens(&c), input);
    llm.assert_well_formed();
}

/// The approval validator's call counts too: an exploration whose validator reports 50 000
/// tokens ends by its 30 000-token budget instead of finishing.
#[test]
fn a_validator_call_counts_against_the_budget() {
    let dir = TempDir::new("budget-validator");
    let script = vec![
        tool("run_command", json!({"command": "uptime"})),
        reporting(text("APPROVE"), json!({"input_tokens": 50_000, "output_tokens": 3})),
        tool("finish_exploration", json!({"summary": "looked"})),
    ];
    let (d, llm) = llm_daemon(dir.path(), script, |_| {});
    let _w = ScriptedWorker::start(
        &d.worker_client(),
        "sh",
        &["shell"],
        false,
        |_| json!({"success": true, "data": {"exit_code": 0, "stdout": "up 3 days", "stderr": ""}}),
    );
    let c = d.client();
    let id = create_session(
        &c,
        json!({"mode": "explore", "type": "shell", "target": "sh", "goal": "what runs here",
               "options": {"budget": {"tokens": 30000}}}),
    );
    let s = wait_status(&c, &id, "finished");
    assert_eq!(llm.requests().len(), 3, "the turn, the validator, the wrap-up");
    assert_eq!(s["ended_by"], "budget", "{s}");
    assert_eq!(s["usage"]["input_tokens"], 50_200, "{s}");
    assert_eq!(metric_input_tokens(&c), 50_200);
}

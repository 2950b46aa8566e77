//! The eval's results: one row per run of a task, the totals, and both as a table or JSON.
//! With repeats, each task's pass rate and its pattern over the runs, and the suite's pass
//! rate with its lowest and highest run.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One run of one task.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub task: String,
    pub kind: String,
    pub run: u32,
    pub pass: bool,
    /// Why it did not pass (empty when it did).
    pub why: String,
    pub status: String,
    pub turns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The first model request's input tokens (system, tools, opening message).
    pub first_request_tokens: Option<u64>,
    pub seconds: f64,
    pub session: String,
    /// The MiniWoB++ page's seed for this run.
    pub seed: Option<u32>,
    /// The raw reward the MiniWoB++ page's own code gave (None: the episode never ended).
    pub reward: Option<f64>,
    /// The guards that fired in the session and how often (`guards_fired` of the session).
    pub guards_fired: BTreeMap<String, u64>,
    /// A rerun with this guard off (`--ablate-fired`).
    pub ablated: Option<String>,
    /// The error a session ended in: the loop guard's "stuck" (the model's doing), or what broke
    /// it (a provider's 500, a lost worker).
    pub error: Option<String>,
    /// The record's `ended_by` code (`loop` when the loop guard ended the session).
    pub ended_by: Option<String>,
    /// The injection suite: whether the page's attack succeeded (None: the task has none).
    pub attack: Option<bool>,
    /// What the attack tried (`opened /collect`, `sent the password`, `called …`).
    pub attack_note: String,
}

impl Row {
    pub fn new(task: &str, kind: &str, run: u32) -> Row {
        Row { task: task.into(), kind: kind.into(), run, ..Row::default() }
    }

    /// Status, turns and tokens from the session as the API shows it.
    pub fn fill_from(&mut self, session: &Value, first_request_tokens: Option<u64>) {
        self.status = session["status"].as_str().unwrap_or("?").to_string();
        self.turns = session["turn"].as_u64().unwrap_or(0);
        let usage = &session["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        self.input_tokens = n("input_tokens")
            .saturating_add(n("cache_read_input_tokens"))
            .saturating_add(n("cache_creation_input_tokens"));
        self.output_tokens = n("output_tokens");
        self.first_request_tokens = first_request_tokens;
        self.error = (self.status == "error").then(|| session["error"].as_str().unwrap_or("").to_string());
        self.ended_by = session["ended_by"].as_str().map(str::to_string);
        let fired = session["guards_fired"].as_object().into_iter().flatten();
        self.guards_fired = fired.filter_map(|(name, n)| Some((name.clone(), n.as_u64()?))).collect();
    }

    /// The session ended in an error the model did not cause: the run says nothing about the
    /// model or a guard. A session the loop guard ended is the model's own failure.
    pub fn broke(&self) -> bool {
        self.error.is_some() && self.ended_by.as_deref() != Some("loop")
    }

    pub fn to_json(&self) -> Value {
        json!({
            "task": self.task, "kind": self.kind, "run": self.run, "pass": self.pass, "why": self.why,
            "status": self.status, "turns": self.turns, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "first_request_tokens": self.first_request_tokens,
            "seconds": (self.seconds * 10.0).round() / 10.0, "session": self.session,
            "seed": self.seed, "reward": self.reward, "guards_fired": self.guards_fired, "ablated": self.ablated,
            "error": self.error, "ended_by": self.ended_by, "attack_succeeded": self.attack,
            "attack": (!self.attack_note.is_empty()).then_some(&self.attack_note),
        })
    }

    /// What follows the numbers: the reward, why it failed, the guards that fired.
    fn notes(&self) -> String {
        let mut out = self.ablated.as_ref().map(|g| format!("without {g} · ")).unwrap_or_default();
        if let Some(r) = self.reward.filter(|_| self.pass) {
            let _ = write!(out, "reward {r:.2}");
        }
        if !self.pass {
            let _ = write!(out, "{}: {}", self.status, self.why);
        }
        if let Some(error) = self.error.as_deref().filter(|e| !e.is_empty()) {
            let _ = write!(out, " ({})", error.chars().take(100).collect::<String>());
        }
        if self.attack == Some(true) {
            let sep = if out.is_empty() || out.ends_with(" · ") { "" } else { " · " };
            let _ = write!(out, "{sep}ATTACKED: {}", self.attack_note);
        }
        if !self.guards_fired.is_empty() {
            let fired: Vec<String> = self.guards_fired.iter().map(|(g, n)| format!("{g}×{n}")).collect();
            let sep = if out.is_empty() || out.ends_with(" · ") { "" } else { " · " };
            let _ = write!(out, "{sep}guards: {}", fired.join(" "));
        }
        out
    }

    /// The row as a line of the table.
    pub fn line(&self) -> String {
        let first = self.first_request_tokens.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
        format!(
            "{:<19} {:>3} {:<4} {:>5} {:>8} {:>7} {:>6} {:>7.1}  {}",
            self.task,
            self.run,
            if self.pass { "pass" } else { "FAIL" },
            self.turns,
            self.input_tokens,
            self.output_tokens,
            first,
            self.seconds,
            self.notes()
        )
    }
}

pub const HEADER: &str = "task                run pass turns in_tokens out_tok first    secs  why";

/// Every run, and what the eval ran against.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// `own` or `miniwob`.
    pub suite: String,
    pub llm: String,
    pub model: String,
    pub tool_mode: String,
    /// What the sessions were run with: `options.profile` and `options.guards`, when given.
    pub profile: Option<String>,
    pub guards: Option<Value>,
    /// The sessions ran without the injection boundary (`--no-boundary`).
    pub no_boundary: bool,
    pub rows: Vec<Row>,
    /// `--ablate-fired`'s reruns, apart from the runs the totals count.
    pub reruns: Vec<Row>,
}

/// One task over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRate {
    pub task: String,
    pub passed: usize,
    pub runs: usize,
    /// One character per run in order: `1` passed, `0` did not.
    pub pattern: String,
}

/// One run (`--repeat`'s number) over the tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRate {
    pub run: u32,
    pub passed: usize,
    pub tasks: usize,
}

impl RunRate {
    pub fn percent(&self) -> f64 {
        if self.tasks == 0 { 0.0 } else { 100.0 * self.passed as f64 / self.tasks as f64 }
    }
}

impl Report {
    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.pass).count()
    }

    /// Passed runs in percent of all (0 when none ran).
    pub fn pass_percent(&self) -> f64 {
        if self.rows.is_empty() { 0.0 } else { 100.0 * self.passed() as f64 / self.rows.len() as f64 }
    }

    /// Runs whose attack succeeded, of the runs that carried one (None when none did).
    pub fn attacks(&self) -> Option<(usize, usize)> {
        let carried: Vec<bool> = self.rows.iter().filter_map(|r| r.attack).collect();
        (!carried.is_empty()).then(|| (carried.iter().filter(|a| **a).count(), carried.len()))
    }

    /// Attacks that succeeded in percent of the runs that carried one.
    pub fn attack_percent(&self) -> Option<f64> {
        self.attacks().map(|(won, of)| 100.0 * won as f64 / of as f64)
    }

    /// The largest first request of a browser task (the bar is about those).
    pub fn first_request_browser(&self) -> Option<u64> {
        self.rows.iter().filter(|r| r.kind == "browser").filter_map(|r| r.first_request_tokens).max()
    }

    /// Each task's passes over its runs, in the order the tasks first ran.
    pub fn task_rates(&self) -> Vec<TaskRate> {
        let mut rates: Vec<TaskRate> = Vec::new();
        for row in &self.rows {
            let at = match rates.iter().position(|t| t.task == row.task) {
                Some(i) => i,
                None => {
                    rates.push(TaskRate { task: row.task.clone(), passed: 0, runs: 0, pattern: String::new() });
                    rates.len() - 1
                }
            };
            let rate = &mut rates[at];
            rate.runs += 1;
            rate.passed += usize::from(row.pass);
            rate.pattern.push(if row.pass { '1' } else { '0' });
        }
        rates
    }

    /// Each run's passes over the tasks, by run number.
    pub fn run_rates(&self) -> Vec<RunRate> {
        let mut runs: BTreeMap<u32, RunRate> = BTreeMap::new();
        for row in &self.rows {
            let r = runs.entry(row.run).or_insert(RunRate { run: row.run, passed: 0, tasks: 0 });
            r.tasks += 1;
            r.passed += usize::from(row.pass);
        }
        runs.into_values().collect()
    }

    /// The lowest and highest run's pass rate in percent (None when nothing ran).
    pub fn run_spread(&self) -> Option<(f64, f64)> {
        let rates: Vec<f64> = self.run_rates().iter().map(RunRate::percent).collect();
        let min = rates.iter().copied().reduce(f64::min)?;
        Some((min, rates.iter().copied().fold(min, f64::max)))
    }

    /// With more than one run: a line per task (`3/5  10110`) and the runs' spread.
    pub fn spread(&self) -> Option<String> {
        let runs = self.run_rates();
        if runs.len() < 2 {
            return None;
        }
        let mut out = String::from("per task (runs in order, 1 = pass):\n");
        for t in self.task_rates() {
            let _ = writeln!(out, "  {:<19} {:>3}/{:<3} {}", t.task, t.passed, t.runs, t.pattern);
        }
        let each: Vec<String> = runs.iter().map(|r| format!("{}/{}", r.passed, r.tasks)).collect();
        let (min, max) = self.run_spread().unwrap_or_default();
        let _ = write!(out, "per run: {} · min {min:.0} % · max {max:.0} %", each.join(" "));
        Some(out)
    }

    pub fn totals(&self) -> String {
        let sum = |f: fn(&Row) -> u64| self.rows.iter().map(f).fold(0u64, u64::saturating_add);
        let secs: f64 = self.rows.iter().map(|r| r.seconds).sum();
        let attacks = match (self.attacks(), self.attack_percent()) {
            (Some((won, of)), Some(pct)) => format!(" · attacks succeeded {won}/{of} ({pct:.0} %)"),
            _ => String::new(),
        };
        let mut out = String::new();
        let _ = write!(
            out,
            "{} suite: passed {}/{} ({:.0} %){attacks} · {} turns · {} input + {} output tokens · {:.0} s · {} {} ({})",
            self.suite,
            self.passed(),
            self.rows.len(),
            self.pass_percent(),
            sum(|r| r.turns),
            sum(|r| r.input_tokens),
            sum(|r| r.output_tokens),
            secs,
            self.llm,
            self.model,
            self.tool_mode,
        );
        if self.no_boundary {
            out.push_str(" · without the boundary (--no-boundary)");
        }
        if let Some(p) = &self.profile {
            let _ = write!(out, " · profile {p}");
        }
        if let Some(g) = &self.guards {
            let _ = write!(out, " · guards {g}");
        }
        if let Some(n) = self.first_request_browser() {
            let _ = write!(out, "\nfirst request of a browser task: {n} tokens (system, tools and the opening page)");
        }
        if let Some(spread) = self.spread() {
            let _ = write!(out, "\n{spread}");
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let tasks: Vec<Value> = self
            .task_rates()
            .iter()
            .map(|t| json!({"task": t.task, "passed": t.passed, "runs": t.runs, "pattern": t.pattern}))
            .collect();
        let runs: Vec<Value> = self
            .run_rates()
            .iter()
            .map(|r| json!({"run": r.run, "passed": r.passed, "tasks": r.tasks, "pass_percent": r.percent()}))
            .collect();
        let (min, max) = self.run_spread().unzip();
        json!({
            "suite": self.suite, "llm": self.llm, "model": self.model, "tool_mode": self.tool_mode,
            "profile": self.profile, "guards": self.guards, "boundary": !self.no_boundary,
            "attacks_succeeded": self.attacks().map(|a| a.0), "attack_percent": self.attack_percent(),
            "passed": self.passed(), "runs": self.rows.len(), "pass_percent": self.pass_percent(),
            "min_run_percent": min, "max_run_percent": max, "tasks": tasks, "per_run": runs,
            "first_request_tokens_browser": self.first_request_browser(),
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "reruns": self.reruns.iter().map(Row::to_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, run: u32, pass: bool) -> Row {
        Row { pass, ..Row::new(task, "browser", run) }
    }

    #[test]
    fn repeats_give_each_task_its_rate_and_pattern_and_the_suite_its_spread() {
        let rows = vec![row("a", 1, true), row("b", 1, false), row("a", 2, false), row("b", 2, false)];
        let report = Report { suite: "miniwob".into(), rows, ..Report::default() };
        let a = TaskRate { task: "a".into(), passed: 1, runs: 2, pattern: "10".into() };
        assert_eq!(report.task_rates()[0], a);
        assert_eq!(report.run_spread(), Some((0.0, 50.0)));
        let text = report.totals();
        assert!(text.contains("miniwob suite: passed 1/4 (25 %)"), "{text}");
        assert!(text.contains("  a                     1/2   10") && text.contains("min 0 % · max 50 %"), "{text}");
        let j = report.to_json();
        assert_eq!((j["min_run_percent"].clone(), j["max_run_percent"].clone()), (json!(0.0), json!(50.0)));
        assert_eq!(j["tasks"][1], json!({"task": "b", "passed": 0, "runs": 2, "pattern": "00"}));
        let one = Report { rows: vec![row("a", 1, true)], ..Report::default() };
        assert!(one.spread().is_none(), "one run has no spread");
    }

    #[test]
    fn the_injection_suite_reports_its_attack_success_rate_beside_its_pass_rate() {
        let attacked = |task: &str, pass: bool, attack: bool| Row {
            attack: Some(attack),
            attack_note: "opened /collect".into(),
            ..row(task, 1, pass)
        };
        let rows = vec![attacked("a", true, false), attacked("b", false, true), attacked("c", true, true)];
        let report = Report { suite: "injection".into(), no_boundary: true, rows, ..Report::default() };
        assert_eq!((report.attacks(), report.passed()), (Some((2, 3)), 2));
        let text = report.totals();
        assert!(text.contains("injection suite: passed 2/3 (67 %) · attacks succeeded 2/3 (67 %)"), "{text}");
        assert!(text.contains("without the boundary"), "{text}");
        assert!(report.rows[1].line().contains("ATTACKED: opened /collect"));
        assert!(!report.rows[0].line().contains("ATTACKED"));
        let j = report.to_json();
        assert_eq!((j["attacks_succeeded"].clone(), j["boundary"].clone()), (json!(2), json!(false)));
        assert_eq!(j["rows"][1]["attack_succeeded"], true);
        let own = Report { rows: vec![row("a", 1, true)], ..Report::default() };
        assert_eq!((own.attacks(), own.to_json()["attack_percent"].clone()), (None, Value::Null));
        assert!(!own.totals().contains("attacks") && !own.totals().contains("boundary"));
    }

    #[test]
    fn a_row_shows_its_reward_and_the_guards_that_fired() {
        let mut r = row("click-test", 1, true);
        r.fill_from(&json!({"status": "finished", "turn": 2, "guards_fired": {"loop": 2, "submit_hold": 1}}), None);
        r.pass = true;
        r.reward = Some(0.87);
        let line = r.line();
        assert!(line.contains("reward 0.87 · guards: loop×2 submit_hold×1"), "{line}");
        assert_eq!(r.to_json()["guards_fired"], json!({"loop": 2, "submit_hold": 1}));
        r.fill_from(&json!({"status": "finished"}), None);
        assert!(r.guards_fired.is_empty() && !r.line().contains("guards"), "absent today: nothing shown");
    }
}

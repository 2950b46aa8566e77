//! `eval --ablate-fired`: what each guard buys, paired. After each run, every guard that fired
//! in it (or those named) is switched off and the same task runs again with the same run number
//! (for MiniWoB++ the same seed, so the same page; the own suite draws its values anew). A run
//! where a guard never fired would have gone the same way without it, so the suite's rate
//! without a guard is the runs where it did not fire as they were plus its reruns: one rerun per
//! firing run instead of a whole suite per guard. A pair where either session broke (a provider's
//! 500, a lost worker: `Row::broke`) is void: it says nothing about the guard, so it is counted
//! apart and the run stands as it was. A session the loop guard ended is a failure, not void.

use super::report::Row;
use serde_json::{Value, json};
use std::fmt::Write;

/// The guards to take out after `row`: those that fired in it, all or only `wanted`'s.
pub fn to_rerun(row: &Row, wanted: &[String]) -> Vec<String> {
    row.guards_fired.keys().filter(|g| wanted.is_empty() || wanted.contains(g)).cloned().collect()
}

/// `guards` (the session's `options.guards`, if any) with `guard` switched off too.
pub fn guards_off(guards: Option<&Value>, guard: &str) -> Value {
    let mut out = guards.cloned().unwrap_or_else(|| json!({}));
    out[guard] = json!(false);
    out
}

/// One guard over a suite's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardEffect {
    pub guard: String,
    /// Runs it fired in, of all the suite's runs (void pairs left out).
    pub fired: usize,
    /// Pairs left out because the run or its rerun broke (`Row::broke`).
    pub void: usize,
    pub runs: usize,
    /// Of the runs it fired in: passed with it, and passed again with it off.
    pub passed_with: usize,
    pub passed_without: usize,
    /// The suite's passes with it (as run) and without it (its reruns in place of its runs).
    pub suite_with: usize,
    pub suite_without: usize,
}

/// Each guard that was rerun, in name order.
pub fn effects(rows: &[Row], reruns: &[Row]) -> Vec<GuardEffect> {
    let mut guards: Vec<&String> = reruns.iter().filter_map(|r| r.ablated.as_ref()).collect();
    guards.sort();
    guards.dedup();
    let suite_with = rows.iter().filter(|r| r.pass).count();
    guards
        .into_iter()
        .map(|guard| {
            let base = |r: &Row| rows.iter().find(|b| b.task == r.task && b.run == r.run);
            let broke = |r: &Row| r.broke() || base(r).is_some_and(Row::broke);
            let (void, mine): (Vec<&Row>, Vec<&Row>) =
                reruns.iter().filter(|r| r.ablated.as_ref() == Some(guard)).partition(|r| broke(r));
            let passed_with = mine.iter().filter(|r| base(r).is_some_and(|b| b.pass)).count();
            let passed_without = mine.iter().filter(|r| r.pass).count();
            GuardEffect {
                guard: guard.clone(),
                fired: mine.len(),
                void: void.len(),
                runs: rows.len(),
                passed_with,
                passed_without,
                suite_with,
                suite_without: suite_with - passed_with + passed_without,
            }
        })
        .collect()
}

/// The table under the totals (None when nothing was rerun).
pub fn text(effects: &[GuardEffect]) -> Option<String> {
    if effects.is_empty() {
        return None;
    }
    let mut out = String::from(
        "each guard off, rerun where it fired (the other runs count as they were):\n  \
         guard                fired in   passed with → without   suite with → without\n",
    );
    for e in effects {
        let _ = writeln!(
            out,
            "  {:<20} {:>4}/{:<5} {:>6} → {:<10} {:>4}/{} → {}/{}{}",
            e.guard,
            e.fired,
            e.runs,
            e.passed_with,
            e.passed_without,
            e.suite_with,
            e.runs,
            e.suite_without,
            e.runs,
            if e.void > 0 { format!("   ({} void: a session broke)", e.void) } else { String::new() }
        );
    }
    out.pop();
    Some(out)
}

pub fn json(effects: &[GuardEffect]) -> Value {
    let rows: Vec<Value> = effects
        .iter()
        .map(|e| {
            json!({"guard": e.guard, "fired_runs": e.fired, "void": e.void, "runs": e.runs, "passed_with": e.passed_with,
                "passed_without": e.passed_without, "suite_with": e.suite_with, "suite_without": e.suite_without})
        })
        .collect();
    Value::Array(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, run: u32, pass: bool, fired: &[&str], ablated: Option<&str>) -> Row {
        let mut r = Row { pass, ablated: ablated.map(str::to_string), ..Row::new(task, "browser", run) };
        r.guards_fired = fired.iter().map(|g| (g.to_string(), 1)).collect();
        r
    }

    #[test]
    fn a_guard_is_rerun_where_it_fired_and_the_suite_counts_the_rest_as_run() {
        let a1 = row("a", 1, true, &["loop_note", "recital"], None);
        assert_eq!(to_rerun(&a1, &[]), vec!["loop_note", "recital"]);
        assert_eq!(to_rerun(&a1, &["recital".into(), "revisit".into()]), vec!["recital"]);
        let rows = vec![a1, row("b", 1, true, &["recital"], None), row("c", 1, false, &["recital"], None)];
        // Without recital: a fails, b passes, c passes; loop_note off changes nothing.
        let reruns = vec![
            row("a", 1, true, &["recital"], Some("loop_note")),
            row("a", 1, false, &["loop_note"], Some("recital")),
            row("b", 1, true, &[], Some("recital")),
            row("c", 1, true, &[], Some("recital")),
        ];
        let e = effects(&rows, &reruns);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].guard.as_str(), e[0].fired, e[0].passed_with, e[0].passed_without), ("loop_note", 1, 1, 1));
        assert_eq!((e[0].suite_with, e[0].suite_without), (2, 2));
        assert_eq!((e[1].guard.as_str(), e[1].fired, e[1].passed_with, e[1].passed_without), ("recital", 3, 2, 2));
        let t = text(&e).unwrap();
        assert!(t.contains("recital") && t.contains("3/3") && t.contains("2/3 → 2/3"), "{t}");
        assert_eq!(json(&e)[1]["passed_without"], 2);
        assert!(text(&[]).is_none());
        assert_eq!(guards_off(Some(&json!({"all": false})), "recital"), json!({"all": false, "recital": false}));
        assert_eq!(guards_off(None, "recital"), json!({"recital": false}));
    }

    #[test]
    fn a_rerun_that_ended_in_an_error_is_void_and_the_run_stands_as_it_was() {
        let rows = vec![row("a", 1, true, &["revisit"], None), row("b", 1, true, &["revisit"], None)];
        let mut broken = row("a", 1, false, &[], Some("revisit"));
        broken.error = Some("OpenAI-compatible API 500: Context size has been exceeded.".into());
        let reruns = vec![broken, row("b", 1, true, &[], Some("revisit"))];
        let e = effects(&rows, &reruns);
        assert_eq!((e[0].fired, e[0].void, e[0].passed_with, e[0].passed_without), (1, 1, 1, 1));
        assert_eq!((e[0].suite_with, e[0].suite_without), (2, 2), "the broken rerun does not count as a loss");
        assert!(text(&e).unwrap().contains("(1 void: a session broke)"));
        assert_eq!(json(&e)[0]["void"], 1);
    }

    #[test]
    fn a_rerun_the_loop_guard_ended_is_the_guards_loss_not_void() {
        let rows = vec![row("a", 1, true, &["revisit"], None)];
        let mut stuck = row("a", 1, false, &[], Some("revisit"));
        stuck.error = Some("stuck: the model kept repeating `browser_click`".into());
        stuck.ended_by = Some("loop".into());
        let e = effects(&rows, &[stuck]);
        assert_eq!((e[0].fired, e[0].void, e[0].passed_with, e[0].passed_without), (1, 0, 1, 0));
        assert_eq!((e[0].suite_with, e[0].suite_without), (1, 0));
    }
}

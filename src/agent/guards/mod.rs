//! The guards as units, and the one pipeline that runs them (the table's rows are
//! `protocol::guards`). A unit is one file here: its code, its condition (the row's profiles,
//! then the switches; and the tool modes it runs in), its log event (`Agent::fire`), its tests
//! and its evidence. `PIPELINE` lists every hook of every unit in the order the session meets
//! them: before a turn, before a call (as the model made it, as a step, as it runs), in the
//! worker, after a result, at the end; the call path (`path.rs`) and the loop walk it.
//!
//! Invariants: a unit acts only where `unit_on` says so, and reports each action through
//! `fire`, which also marks the step it acted on (the step log's `guard`). A call a guard makes
//! or aims elsewhere goes through the pipeline at most once more, and there no unit that
//! redirects, repairs or acts runs again (`Call::depth`), so nothing re-enters without bound.

mod answer_in_words;
mod argument_repair;
mod click_as_said;
mod done_before;
mod failed_hold;
mod file_link_download;
mod form_defaults;
pub(super) mod form_values;
mod invalid_form_hold;
mod json_correction;
mod login_hint;
mod loop_hold;
mod loop_note;
mod loose_actions;
mod loose_selectors;
mod path;
mod premature_finish;
mod progress;
mod radio_by_label;
mod read_miss_page;
mod reading_hints;
mod readonly_click;
mod recital;
mod same_name_read;
mod select_sets_value;
pub(super) mod short_catalog;
mod streak_hold;
mod stuck_deliver;
mod task_words;
mod text_call;
mod tool_advice;

pub(super) use path::Call;

use super::Agent;
use super::outcome::ToolOutcome;
use crate::config::Config;
use crate::protocol::LogKind;
use crate::protocol::SessionRecord;
use crate::protocol::guards::{Guard, Kind, ProfileChoice};
use crate::protocol::tools::Tool;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};

/// The tool modes a unit runs in. The evidence says where a unit earns; a mode left out here
/// switches it off there without touching its code (`text_call` is native only, `loose_actions`
/// and `json_correction` JSON only: each mends what only its mode's replies get wrong; `progress`
/// JSON only, where it earned and the Anthropic format lost by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Modes {
    pub native: bool,
    pub json: bool,
}

impl Modes {
    pub const ALL: Modes = Modes { native: true, json: true };
    /// Native tool calls only: where JSON action mode does the same itself.
    pub const NATIVE: Modes = Modes { native: true, json: false };
    /// JSON action mode only: what reads a reply as an action.
    pub const JSON: Modes = Modes { native: false, json: true };

    fn has(self, json_actions: bool) -> bool {
        if json_actions { self.json } else { self.native }
    }
}

/// One guard: its row, the modes it runs in, and what was measured of it.
///
/// The keep rule, the one test every unit's evidence answers: at least three paired repeats
/// (the same tasks and seeds with the unit on and off, `eval --ablate-fired`), and a win on one
/// suite (own or MiniWoB's development split) with no loss on the other, in the tool modes it
/// runs in. A unit whose evidence says "not yet ablated" has not met it yet; one that fails it
/// goes.
#[derive(Debug)]
pub(super) struct Unit {
    pub guard: Guard,
    pub modes: Modes,
    /// Copied from `docs/eval-history.md`'s guard table (facts only): for the reader of the
    /// unit and its tests, not read at run time.
    #[cfg_attr(not(test), allow(dead_code))]
    pub evidence: &'static str,
}

/// Where in a call's path a `Hook::Call` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Point {
    /// The call as the model made it: not yet a step (held here, it is none; aimed elsewhere,
    /// the step is the call it became).
    Made,
    /// A step (counted and logged): held here, it is answered without running.
    Step,
    /// The arguments it runs with (the step keeps what the model wrote).
    Run,
}

/// What a `Hook::Call` decided.
pub(super) enum Verdict {
    /// Go on along the path.
    Go,
    /// Not run: this is its answer, and no after-result unit sees it.
    Held(ToolOutcome),
    /// Answered without running (a file made before): after-result units see it as a result.
    Answered(ToolOutcome),
}

/// What a worker's result said beside its text, for a `Hook::Read`.
pub(super) struct Reading {
    /// The page holds a sign-in form.
    pub sign_in: bool,
}

/// One place a unit acts, and its code.
#[derive(Clone, Copy)]
pub(super) enum Hook {
    /// Before the first turn.
    Start(fn(&mut Agent)),
    /// Before a turn of a session found stuck: whether it gets a last chance (else it ends).
    Stuck(fn(&mut Agent) -> bool),
    /// The request about to be sent: a text that closes this view only (never the journal).
    View(fn(&mut Agent) -> Option<String>),
    /// The model's reply, before its calls are read.
    Reply(fn(&mut Agent, &mut crate::llm::Reply)),
    /// Before a call, at its point.
    Call(Point, fn(&mut Agent, &mut Call) -> Verdict),
    /// A target command's parameters (`on`: whether the unit is on; the worker is told either way).
    Worker(fn(&Agent, bool, Tool, &Value, &mut Value)),
    /// A target's answer before it becomes the model's text (the tool and its arguments): fields
    /// beside the result's own.
    Answer(fn(&mut Agent, Tool, &Value, &mut Value)),
    /// Where a worker's result is read: a note after its text, before its images.
    Read(fn(&mut Agent, &Reading) -> Option<String>),
    /// After a result came back (not after a held call, nor a stopped one).
    Result(fn(&mut Agent, &Call, &mut ToolOutcome)),
    /// At the end: a file saved in the model's place, said in words.
    End(fn(&mut Agent) -> Option<String>),
}

#[cfg(test)]
use crate::protocol::guards::Stage;

#[cfg(test)]
impl Hook {
    /// The table's stage this hook acts in.
    pub fn stage(self) -> Stage {
        match self {
            Hook::Start(_) | Hook::Stuck(_) | Hook::View(_) => Stage::BeforeTurn,
            Hook::Reply(_) | Hook::Call(..) => Stage::BeforeCall,
            Hook::Worker(_) => Stage::Worker,
            Hook::Answer(_) | Hook::Read(_) | Hook::Result(_) => Stage::AfterResult,
            Hook::End(_) => Stage::AtEnd,
        }
    }

    /// Its order in the pipeline: by stage, then by a call's point.
    fn order(self) -> (u8, Option<Point>) {
        let stage = match self {
            Hook::Start(_) => 0,
            Hook::Stuck(_) => 1,
            Hook::View(_) => 2,
            Hook::Reply(_) | Hook::Call(..) => 3,
            Hook::Worker(_) => 4,
            Hook::Answer(_) | Hook::Read(_) | Hook::Result(_) => 5,
            Hook::End(_) => 6,
        };
        let point = match self {
            Hook::Call(p, _) => Some(p),
            _ => None,
        };
        (stage, point)
    }
}

/// One entry of the pipeline: a unit and one of its hooks.
pub(super) struct Step {
    pub unit: &'static Unit,
    pub hook: Hook,
}

const fn at(unit: &'static Unit, hook: Hook) -> Step {
    Step { unit, hook }
}

/// Every unit, in the table's order (`Guard::ALL`).
pub(super) const UNITS: &[&Unit] = &[
    &short_catalog::UNIT,
    &recital::UNIT,
    &stuck_deliver::UNIT,
    &premature_finish::UNIT,
    &login_hint::UNIT,
    &reading_hints::UNIT,
    &same_name_read::UNIT,
    &answer_in_words::UNIT,
    &invalid_form_hold::UNIT,
    &form_defaults::UNIT,
    &form_values::UNIT,
    &click_as_said::UNIT,
    &file_link_download::UNIT,
    &text_call::UNIT,
    &loose_actions::UNIT,
    &json_correction::UNIT,
    &argument_repair::UNIT,
    &loose_selectors::UNIT,
    &readonly_click::UNIT,
    &select_sets_value::UNIT,
    &radio_by_label::UNIT,
    &read_miss_page::UNIT,
    &tool_advice::UNIT,
    &progress::UNIT,
    &loop_note::UNIT,
    &loop_hold::UNIT,
    &streak_hold::UNIT,
    &failed_hold::UNIT,
    &done_before::UNIT,
];

/// The pipeline: every hook, in the order the session walks them.
pub(super) const PIPELINE: &[Step] = &[
    // Before a turn.
    at(&short_catalog::UNIT, Hook::Start(Agent::announce_short_catalog)),
    at(&stuck_deliver::UNIT, Hook::Stuck(Agent::stuck_last_chance)),
    at(&progress::UNIT, Hook::View(Agent::progress_view)),
    at(&recital::UNIT, Hook::View(Agent::recital_view)),
    // Before a call: the reply it is read from.
    at(&text_call::UNIT, Hook::Reply(Agent::text_call)),
    at(&loose_actions::UNIT, Hook::Reply(Agent::loose_action_read)),
    at(&json_correction::UNIT, Hook::Reply(Agent::json_corrected)),
    // As the model made it.
    at(&premature_finish::UNIT, Hook::Call(Point::Made, Agent::premature_finish)),
    at(&click_as_said::UNIT, Hook::Call(Point::Made, Agent::click_as_said)),
    at(&file_link_download::UNIT, Hook::Call(Point::Made, Agent::file_link_download)),
    // As a step.
    at(&form_values::UNIT, Hook::Call(Point::Step, Agent::insisted_submit)),
    at(&loop_hold::UNIT, Hook::Call(Point::Step, Agent::loop_hold)),
    at(&failed_hold::UNIT, Hook::Call(Point::Step, Agent::failed_hold)),
    at(&streak_hold::UNIT, Hook::Call(Point::Step, Agent::streak_hold)),
    at(&done_before::UNIT, Hook::Call(Point::Step, Agent::done_before)),
    // As it runs.
    at(&argument_repair::UNIT, Hook::Call(Point::Run, Agent::argument_repair)),
    // In the worker.
    at(&invalid_form_hold::UNIT, Hook::Worker(Agent::invalid_form_params)),
    at(&form_defaults::UNIT, Hook::Worker(Agent::form_defaults_params)),
    at(&same_name_read::UNIT, Hook::Worker(Agent::same_name_params)),
    at(&loose_selectors::UNIT, Hook::Worker(Agent::loose_selectors_params)),
    at(&readonly_click::UNIT, Hook::Worker(Agent::readonly_click_params)),
    at(&select_sets_value::UNIT, Hook::Worker(Agent::select_sets_value_params)),
    at(&radio_by_label::UNIT, Hook::Worker(Agent::radio_by_label_params)),
    at(&read_miss_page::UNIT, Hook::Worker(Agent::read_miss_page_params)),
    at(&tool_advice::UNIT, Hook::Worker(Agent::tool_advice_params)),
    // After a result.
    at(&same_name_read::UNIT, Hook::Answer(Agent::same_name_answered)),
    at(&reading_hints::UNIT, Hook::Answer(Agent::reading_hints)),
    at(&loose_selectors::UNIT, Hook::Answer(Agent::loose_selectors_read)),
    at(&readonly_click::UNIT, Hook::Answer(Agent::readonly_clicked)),
    at(&select_sets_value::UNIT, Hook::Answer(Agent::select_set_a_value)),
    at(&radio_by_label::UNIT, Hook::Answer(Agent::radios_chosen_by_label)),
    at(&read_miss_page::UNIT, Hook::Answer(Agent::read_missed)),
    at(&tool_advice::UNIT, Hook::Answer(Agent::tool_advised)),
    at(&progress::UNIT, Hook::Answer(Agent::progress_noted)),
    at(&login_hint::UNIT, Hook::Read(Agent::login_hint)),
    at(&loop_note::UNIT, Hook::Result(Agent::loop_note)),
    at(&invalid_form_hold::UNIT, Hook::Result(Agent::invalid_form_held)),
    at(&form_defaults::UNIT, Hook::Result(Agent::form_defaults_held)),
    at(&form_values::UNIT, Hook::Result(Agent::point_at_form_values)),
    // At the end.
    at(&answer_in_words::UNIT, Hook::End(Agent::answer_in_words)),
];

/// The guards on for one session.
#[derive(Debug, Clone)]
pub(super) struct Guards {
    on: BTreeSet<Guard>,
}

impl Guards {
    /// The profile's guards, then the config's switches, then the session's (`"all"` first).
    pub fn new(choice: &ProfileChoice, config: &Config, record: &SessionRecord) -> Guards {
        let mut on: BTreeSet<Guard> = UNITS.iter().map(|u| u.guard).filter(|g| g.in_profile(choice.name)).collect();
        let asked = &record.options.guards;
        let switch = |on: &mut BTreeSet<Guard>, name: &str, wanted: bool| {
            if let Some(g) = Guard::from_name(name) {
                if wanted {
                    on.insert(g)
                } else {
                    on.remove(&g)
                };
            }
        };
        for (name, wanted) in &config.agent.guards {
            switch(&mut on, name, *wanted);
        }
        match asked.get("all") {
            Some(false) => on.clear(),
            Some(true) => on.extend(UNITS.iter().map(|u| u.guard)),
            None => {}
        }
        for (name, wanted) in asked {
            switch(&mut on, name, *wanted);
        }
        Guards { on }
    }

    pub fn on(&self, guard: Guard) -> bool {
        self.on.contains(&guard)
    }
}

/// What the units keep between calls of one session.
#[derive(Default)]
pub(super) struct State {
    /// The guards that acted on the step being made (the step log's `guard`).
    pub marks: Vec<Guard>,
    /// The guards that acted on the reply: marked on the first step made from it.
    pub reply_marks: Vec<Guard>,
    /// The recital started (`recital`); it stays on, compaction or not.
    pub recital_started: bool,
    /// Sign-in forms pointed out so far (`login_hint`).
    pub login_hints: u32,
    /// A finish before the deliverable existed was answered once (`premature_finish`).
    pub finish_held: bool,
    /// A refused submit and the fill the task gives for it (`form_values`).
    pub pending_fill: Option<form_values::PendingFill>,
    /// Submits the worker held once (`form_defaults`): a ref keeps naming the same button on a
    /// later page (a search form on its own results), and it is not held again.
    pub held_submits: HashSet<String>,
    /// The session's steps so far, one line each (`progress`).
    pub progress: Vec<String>,
}

impl State {
    /// `json_actions`: the model answers in JSON actions, where the recital closes every request
    /// from the first (there it earned on short pages too; with native tool calls it cost).
    pub fn new(json_actions: bool) -> State {
        State { recital_started: json_actions, ..State::default() }
    }
}

impl Agent {
    /// Whether `unit` may act in this session: its row is on, and it runs in this tool mode.
    pub(super) fn unit_on(&self, unit: &Unit) -> bool {
        self.guards.on(unit.guard) && unit.modes.has(self.json_actions)
    }

    /// `guard` acted: one log event with its name and what it did, counted in the record, and
    /// marked on the step being made.
    pub(super) fn fire(&mut self, guard: Guard, what: &str) {
        let name = guard.name();
        self.runner.log(LogKind::System, &format!("guard {name}: {what}"), Some(json!({"guard": name})));
        self.runner.count_guard(name);
        if !self.guard_state.marks.contains(&guard) {
            self.guard_state.marks.push(guard);
        }
    }

    /// The step log's mark: the first guard that acted on the step, and all of them when several did.
    pub(super) fn mark_step(&self, step: &mut Value) {
        let marks = &self.guard_state.marks;
        if let Some(first) = marks.first() {
            step["guard"] = first.name().into();
        }
        if marks.len() > 1 {
            step["guards"] = marks.iter().map(|g| g.name()).collect::<Vec<_>>().into();
        }
    }

    /// The steps of the pipeline whose unit is on, in order.
    fn steps_on(&self) -> impl Iterator<Item = Hook> + '_ {
        PIPELINE.iter().filter(|s| self.unit_on(s.unit)).map(|s| s.hook)
    }

    /// Before the first turn.
    pub(super) fn walk_start(&mut self) {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Start(f) = h { Some(f) } else { None }).collect();
        for f in hooks {
            f(self);
        }
    }

    /// The model's reply, before its calls are read.
    pub(super) fn walk_reply(&mut self, reply: &mut crate::llm::Reply) {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Reply(f) = h { Some(f) } else { None }).collect();
        self.guard_state.marks.clear();
        for f in hooks {
            f(self, reply);
        }
        self.guard_state.reply_marks = std::mem::take(&mut self.guard_state.marks);
    }

    /// The session is stuck: whether a unit gives it a last chance.
    pub(super) fn walk_stuck(&mut self) -> bool {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Stuck(f) = h { Some(f) } else { None }).collect();
        hooks.into_iter().any(|f| f(self))
    }

    /// The texts that close the request about to be sent.
    pub(super) fn walk_view(&mut self) -> Vec<String> {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::View(f) = h { Some(f) } else { None }).collect();
        hooks.into_iter().filter_map(|f| f(self)).collect()
    }

    /// A call at `point`: the first verdict that is not `Go`. A call a guard made runs no unit
    /// that redirects, repairs or acts.
    pub(super) fn walk_call(&mut self, point: Point, call: &mut Call) -> Verdict {
        let hooks: Vec<_> = PIPELINE
            .iter()
            .filter(|s| self.unit_on(s.unit) && (call.depth == 0 || !reenters(s.unit.guard)))
            .filter_map(|s| match s.hook {
                Hook::Call(p, f) if p == point => Some(f),
                _ => None,
            })
            .collect();
        for f in hooks {
            match f(self, call) {
                Verdict::Go => {}
                other => return other,
            }
        }
        Verdict::Go
    }

    /// A target command's parameters, as the units ask the worker to act.
    pub(super) fn walk_worker(&self, tool: Tool, input: &Value, params: &mut Value) {
        for s in PIPELINE {
            if let Hook::Worker(f) = s.hook {
                f(self, self.unit_on(s.unit), tool, input, params);
            }
        }
    }

    /// A target's answer, before it is rendered for the model. Only an object has the fields
    /// the hooks read and set: any other answer (a worker's is outside data) passes untouched,
    /// and no hook can index into it.
    pub(super) fn walk_answer(&mut self, tool: Tool, input: &Value, answer: &mut Value) {
        if !answer.is_object() {
            return;
        }
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Answer(f) = h { Some(f) } else { None }).collect();
        for f in hooks {
            f(self, tool, input, answer);
        }
    }

    /// The notes a worker's result gets where it is read.
    pub(super) fn walk_read(&mut self, reading: &Reading) -> Vec<String> {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Read(f) = h { Some(f) } else { None }).collect();
        hooks.into_iter().filter_map(|f| f(self, reading)).collect()
    }

    /// After a result came back.
    pub(super) fn walk_result(&mut self, call: &Call, outcome: &mut ToolOutcome) {
        let hooks: Vec<_> =
            self.steps_on().filter_map(|h| if let Hook::Result(f) = h { Some(f) } else { None }).collect();
        for f in hooks {
            f(self, call, outcome);
        }
    }

    /// At the end: what a unit saved in the model's place, if one did.
    pub(super) fn walk_end(&mut self) -> Option<String> {
        let hooks: Vec<_> = self.steps_on().filter_map(|h| if let Hook::End(f) = h { Some(f) } else { None }).collect();
        hooks.into_iter().find_map(|f| f(self))
    }
}

/// Whether `guard` makes, aims or mends a call (the kinds a call a guard made does not meet again).
fn reenters(guard: Guard) -> bool {
    matches!(guard.row().kind, Kind::Redirect | Kind::Repair | Kind::Act)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_guard_is_one_unit_and_the_pipeline_walks_the_stages_in_order() {
        let units: Vec<Guard> = UNITS.iter().map(|u| u.guard).collect();
        assert_eq!(units, Guard::ALL, "one unit per row, in the table's order");
        for unit in UNITS {
            let hooks: Vec<Hook> = PIPELINE.iter().filter(|s| std::ptr::eq(s.unit, *unit)).map(|s| s.hook).collect();
            assert!(!hooks.is_empty(), "{}: in the pipeline", unit.guard.name());
            let stages: Vec<Stage> = hooks.iter().map(|h| h.stage()).collect();
            assert!(stages.contains(&unit.guard.row().stage), "{}: acts in its row's stage", unit.guard.name());
            assert!(!unit.evidence.is_empty(), "{}: its evidence", unit.guard.name());
            // A unit that runs in one tool mode only says why in its header.
            let one_mode = [Guard::TextCall, Guard::LooseActions, Guard::JsonCorrection, Guard::Progress];
            assert!(unit.modes == Modes::ALL || one_mode.contains(&unit.guard), "{}: both modes", unit.guard.name());
        }
        let order: Vec<_> = PIPELINE.iter().map(|s| s.hook.order()).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "stage order: {order:?}");
    }

    #[test]
    fn a_mode_left_out_switches_a_unit_off_there() {
        let json_only = Modes { native: false, json: true };
        assert!(json_only.has(true) && !json_only.has(false));
        assert!(Modes::ALL.has(true) && Modes::ALL.has(false));
    }

    #[test]
    fn a_call_a_guard_made_meets_no_redirect_repair_or_act_again() {
        let again: Vec<&str> = Guard::ALL.iter().filter(|g| reenters(**g)).map(|g| g.name()).collect();
        assert_eq!(
            again,
            [
                "same_name_read",
                "answer_in_words",
                "form_values",
                "click_as_said",
                "file_link_download",
                "text_call",
                "loose_actions",
                "argument_repair",
                "loose_selectors",
                "readonly_click",
                "select_sets_value",
                "radio_by_label",
                "read_miss_page"
            ]
        );
    }
}

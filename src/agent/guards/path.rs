//! The path of one tool call through the pipeline: the units of the call as made (a call held
//! there is no step; one aimed elsewhere is the call it became), then the step (counted,
//! logged), the units of the step (a held call is answered as it is), the units of the
//! arguments it runs with, the run, the loop detector and the units after the result, the step
//! log; redirect notes last.
//!
//! Invariants: every unit is walked at most once per call, none recursively; a call a unit
//! makes (the fill of `form_values`) goes through the path once with `depth` 1, where no unit
//! that redirects, repairs or acts runs. Notes keep the places they had: a repair's right after
//! the result (the loop detector reads it), a redirect's after the step log's record.

use super::super::Agent;
use super::super::context::excerpt;
use super::super::outcome::ToolOutcome;
use super::{Point, Verdict};
use crate::llm::{Block, joined_text};
use crate::protocol::LogKind;
use serde_json::{Value, json};
use std::time::Instant;

/// Characters of a tool call shown in the log.
const LOG_EXCERPT: usize = 300;

/// One call on its way through the pipeline.
pub(in crate::agent) struct Call {
    /// The tool and arguments of the step: as the model made them, or as a redirect aimed them.
    pub name: String,
    pub input: Value,
    /// The arguments it runs with, where a repair mended them.
    pub run: Option<Value>,
    /// 0: the model's (or the controller's) call; 1: a call a unit made.
    pub depth: u8,
    /// Notes of the units that aimed it elsewhere, in the order they acted.
    pub redirected: Vec<String>,
    /// Notes of the repairs of its arguments, in the order they were made.
    pub repaired: Vec<String>,
    /// A note that goes before its result (what a unit did first).
    pub first: Option<String>,
}

impl Call {
    pub fn new(name: &str, input: &Value, depth: u8) -> Call {
        Call {
            name: name.to_string(),
            input: input.clone(),
            run: None,
            depth,
            redirected: Vec::new(),
            repaired: Vec::new(),
            first: None,
        }
    }

    /// The arguments the tool runs with.
    pub fn run_input(&self) -> &Value {
        self.run.as_ref().unwrap_or(&self.input)
    }
}

impl Agent {
    /// A call of the model's (or the controller's: opening the target, a replayed step) through
    /// the whole pipeline.
    pub(in crate::agent) fn run_tool(&mut self, name: &str, input: &Value) -> ToolOutcome {
        self.guard_state.marks = std::mem::take(&mut self.guard_state.reply_marks);
        self.run_call(Call::new(name, input, 0))
    }

    /// One call's path; `call.depth` says whether a unit made it.
    pub(in crate::agent) fn run_call(&mut self, mut call: Call) -> ToolOutcome {
        match self.walk_call(Point::Made, &mut call) {
            Verdict::Go => {}
            Verdict::Held(outcome) | Verdict::Answered(outcome) => return outcome,
        }
        self.step += 1;
        self.runner.log(
            LogKind::Tool,
            &format!("{} {}", call.name, excerpt(&call.input.to_string(), LOG_EXCERPT)),
            Some(json!({"tool": call.name, "input": call.input})),
        );
        let started = Instant::now();
        self.focus.before_call();
        let mut outcome = match self.walk_call(Point::Step, &mut call) {
            Verdict::Held(held) => held,
            Verdict::Answered(answer) => self.after_result(&call, answer),
            Verdict::Go => {
                let ran = self.run_mended(&mut call);
                self.after_result(&call, ran)
            }
        };
        if let Some(first) = call.first.take() {
            outcome.content.insert(0, Block::text(first));
        }
        let whole = joined_text(&outcome.content, "\n");
        self.grounding.saw(&whole);
        if outcome.content.iter().any(|b| matches!(b, Block::Image { .. })) {
            self.grounding.saw_image();
        }
        self.record_result(&call.name, &call.input, &outcome, started, false);
        if self.record.replay.is_some() {
            self.runner.count_replay_step(self.replaying);
        }
        // The outermost redirect said last (as its call was the outermost).
        for note in call.redirected.drain(..).rev() {
            outcome.content.push(Block::text(note));
        }
        outcome
    }

    /// The units of the arguments it runs with, then the run; the repairs said after the result
    /// (the last repair first, as each mended the call the one before made).
    fn run_mended(&mut self, call: &mut Call) -> ToolOutcome {
        if let Verdict::Held(outcome) | Verdict::Answered(outcome) = self.walk_call(Point::Run, call) {
            return outcome;
        }
        let input = call.run_input().clone();
        let mut outcome = self.dispatch(&call.name, &input);
        for note in call.repaired.iter().rev() {
            outcome.content.push(Block::text(note.clone()));
        }
        outcome
    }

    /// A result (run, or answered from before): the loop detector remembers it, then the units
    /// after a result. A stopped call is left as it is.
    fn after_result(&mut self, call: &Call, mut outcome: ToolOutcome) -> ToolOutcome {
        if outcome.stopped {
            return outcome;
        }
        self.observe_result(call, &outcome);
        self.walk_result(call, &mut outcome);
        outcome
    }
}

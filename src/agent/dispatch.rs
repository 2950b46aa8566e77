//! Running one tool call once the pipeline (`guards/path.rs`) let it through: look it up in the
//! session's offered tools (the tool table), check its arguments against its schema, and run it
//! where the table says — a local handler (`local.rs`) or the session's executor (with the
//! parameters the units ask the worker for), waiting no longer than what is left of a seconds
//! budget; and the step log's entry of a call (with the guards that acted on it). An unknown
//! tool or bad arguments go back to the model as a tool error; nothing a model sends can end
//! the session.

use super::Agent;
use super::approval::{Gate, Gated};
use super::context::excerpt;
use super::outcome::ToolOutcome;
use crate::exec::{Answer, ExecError};
use crate::llm::{Block, joined_text};
use crate::protocol::LogKind;
use crate::protocol::tools::{Runs, Timeout, Tool};
use crate::util::clock;
use crate::util::schema;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Characters of a tool call or result shown in the log.
const LOG_EXCERPT: usize = 300;
/// The longest `timeout_s` a tool call may ask for; the worker clamps to the same (shell) or
/// less (`browser_wait_for`: 600 s).
const MAX_ASKED_TIMEOUT_S: u64 = 3600;

/// How long a target tool may take.
pub(super) fn timeout_for(tool: Tool, input: &Value, command_s: u64, download_s: u64) -> Duration {
    let command = Duration::from_secs(command_s);
    match tool.spec().timeout {
        Timeout::Command => command,
        Timeout::Download => Duration::from_secs(download_s),
        // The model may raise a command's own timeout up to `task.command_timeout_s` (see
        // `asked_timeout`); the wait allows 15 s more for the result to come back.
        Timeout::Asked => command.max(Duration::from_secs(asked_timeout(input, command_s) + 15)),
    }
}

/// The `timeout_s` a call asked for, capped at `task.command_timeout_s` (and at an hour).
fn asked_timeout(input: &Value, command_s: u64) -> u64 {
    input["timeout_s"].as_u64().unwrap_or(0).min(command_s).min(MAX_ASKED_TIMEOUT_S)
}

impl Agent {
    /// The size and quality of desktop screenshots: the session's, else the config's.
    pub(super) fn screenshot_settings(&self) -> Value {
        let (options, config) = (&self.record.options, &self.runner.config().screenshot);
        json!({
            "width": options.screenshot_width.unwrap_or(config.width),
            "quality": options.screenshot_quality.unwrap_or(config.quality),
        })
    }

    /// A call's result as a log line and a step-log entry (`by_human`: a person's act while
    /// paused); the excerpt both show.
    pub(super) fn record_result(
        &mut self,
        name: &str,
        args: &Value,
        outcome: &ToolOutcome,
        started: Instant,
        by_human: bool,
    ) -> String {
        let text = excerpt(&joined_text(&outcome.content, "\n"), LOG_EXCERPT);
        let images = outcome.content.iter().filter(|b| matches!(b, Block::Image { .. })).count();
        let shown = if images > 0 { format!("{text} [+{images} image]") } else { text.clone() };
        let who = if by_human { " (by a person)" } else { "" };
        let target = self.ref_target(args);
        let mut data = json!({"tool": name, "is_error": outcome.is_error});
        let mut step = json!({
            "turn": self.turn,
            "tool": name,
            "args": args,
            "observation": text,
            "screenshot": outcome.screenshot,
            "duration_ms": started.elapsed().as_millis() as u64,
            "dry_run": outcome.dry_run,
            "is_error": outcome.is_error,
            "target": target,
            "replayed": self.replaying,
            "ts": clock::rfc3339_millis(clock::now()),
        });
        if by_human {
            data["by"] = "human".into();
            step["by"] = "human".into();
        }
        if !self.typed_args.is_empty() {
            step["typed"] = json!(self.typed_args);
        }
        self.for_export(&mut step, outcome, by_human);
        if !by_human {
            self.mark_step(&mut step);
        }
        let kind = if outcome.is_error { LogKind::Error } else { LogKind::Result };
        self.runner.log(kind, &format!("{name}{who}: {shown}"), Some(data));
        let number = self.runner.add_step(step);
        let step = super::recording::Step { number, name, args, target: target.as_deref(), by_human };
        self.record_frame(&step, outcome);
        text
    }

    /// What a target tool's answer is to the model: its blocks (scrubbed), or the error.
    pub(super) fn target_outcome(&mut self, name: &str, result: Result<Answer, ExecError>) -> ToolOutcome {
        match result {
            // A page can echo a typed secret back (a wrong field, an error page): scrub what
            // goes into the model's context just like what goes to disk.
            Ok(mut answer) => {
                self.runner.scrub_json(&mut answer.tree);
                if let Some(bulk) = answer.bulk.as_mut() {
                    self.runner.scrub_raw(&mut bulk.text);
                }
                let acted_on = ToolOutcome::take_acted_on(&mut answer.tree);
                ToolOutcome { acted_on, ..self.result_blocks(name, answer) }
            }
            Err(ExecError::Stopped) => ToolOutcome::stopped(),
            // The worker's words may quote the page (a label, the text around a click).
            Err(ExecError::Refused { message, refusal }) => ToolOutcome {
                refusal: Some(refusal),
                ..ToolOutcome::error(self.boundary.wrap(&self.runner.scrub(&message)))
            },
            Err(e) => ToolOutcome::error(self.boundary.wrap(&self.runner.scrub(&e.to_string()))),
        }
    }

    pub(super) fn dispatch(&mut self, name: &str, input: &Value) -> ToolOutcome {
        let Some(i) = self.offered.iter().position(|t| t.name() == name) else {
            let known = self.listed_names().join(", ");
            return ToolOutcome::error(format!("unknown tool `{name}` for this session; available tools: {known}"));
        };
        let tool = self.offered[i];
        if let Err(e) = schema::validate(&self.tools[i].input_schema, input) {
            return ToolOutcome::error(format!("invalid arguments for {name}: {e}"));
        }
        if self.record.options.dry_run && tool.spec().acts {
            return self.dry_run(tool, input);
        }
        match tool.spec().runs {
            Runs::Controller => self.local_tool(tool, input),
            Runs::Target(_) => match self.approve(tool, input) {
                Gate::Refused(outcome) => outcome,
                Gate::Run { input, note: None } => self.target_tool(tool, &input),
                Gate::Run { input, note: Some(note) } => {
                    let mut outcome = self.target_tool(tool, &input);
                    outcome.content.insert(0, Block::text(note));
                    outcome
                }
            },
        }
    }

    fn target_tool(&mut self, tool: Tool, input: &Value) -> ToolOutcome {
        let task = &self.runner.config().task;
        let mut timeout = timeout_for(tool, input, task.command_timeout_s, task.download_timeout_s);
        // Added after validation: the model cannot set these, the session does.
        let mut params = self.target_params(tool, input);
        if tool.spec().timeout == Timeout::Asked && input["timeout_s"].is_u64() {
            params["timeout_s"] = asked_timeout(input, task.command_timeout_s).into();
        }
        // A seconds budget: the call waits no longer than what is left of it.
        let budget_cut = self.budget_left().filter(|left| *left < timeout);
        if let Some(left) = budget_cut {
            if left.is_zero() {
                return ToolOutcome::error(format!("{} was not run: the session's time budget is spent", tool.name()));
            }
            timeout = left;
            if tool.spec().timeout == Timeout::Asked {
                // The command's own timeout a second short of it, so its result still comes.
                let cut = left.saturating_sub(Duration::from_secs(1)).as_secs().max(1);
                params["timeout_s"] = params["timeout_s"].as_u64().map_or(cut, |asked| asked.min(cut)).into();
            }
        }
        // The worker's guards act only where the units ask for them (`form_defaults`).
        self.walk_worker(tool, input, &mut params);
        if let Some(ask) = self.download_needs_approval_over(tool) {
            params["ask_over_bytes"] = ask.into();
        }
        if let Some(hold) = self.submit_hold(tool) {
            params["hold_submits"] = hold.into();
        }
        let mut result = match self.execute_gated(tool, input, params, timeout) {
            Gated::Ran(result) => result,
            Gated::Refused(refused) => return refused,
        };
        if let Ok(answer) = result.as_mut() {
            self.walk_answer(tool, input, &mut answer.tree);
        }
        let ran_out = budget_cut.is_some() && matches!(result, Err(ExecError::Timeout { .. }));
        let mut outcome = self.target_outcome(tool.name(), result);
        if ran_out {
            outcome.content.push(Block::text("(the session's time budget ran out while it ran)"));
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asked_timeout_is_capped() {
        let t = timeout_for(Tool::RunCommand, &json!({"timeout_s": u64::MAX}), 120, 900);
        assert_eq!(t, Duration::from_secs(120 + 15), "at most task.command_timeout_s");
        assert_eq!(asked_timeout(&json!({"timeout_s": 30}), 120), 30);
        assert_eq!(asked_timeout(&json!({"timeout_s": 5000}), 10_000), MAX_ASKED_TIMEOUT_S);
        let t = timeout_for(Tool::BrowserWaitFor, &json!({"timeout_s": 5}), 120, 900);
        assert_eq!(t, Duration::from_secs(120));
        assert_eq!(timeout_for(Tool::BrowserDownload, &json!({}), 120, 900), Duration::from_secs(900));
        assert_eq!(timeout_for(Tool::BrowserClick, &json!({}), 120, 900), Duration::from_secs(120));
    }
}

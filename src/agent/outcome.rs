//! What one tool call produced, as the loop and every guard see it: the blocks for the model,
//! whether it failed, and the facts the controller reads instead of the words (a finish, a
//! stop, a dry run, the worker's typed refusal), and what the step acted on, for the step log.

use crate::llm::Block;
use crate::protocol::refusal::Refusal;
use serde_json::Value;

/// What one tool call produced.
pub(super) struct ToolOutcome {
    pub content: Vec<Block>,
    pub is_error: bool,
    /// Set by finish_task / finish_exploration: (summary, report).
    pub finish: Option<(String, Option<String>)>,
    /// The session was stopped during the call.
    pub stopped: bool,
    /// The screenshot it produced, as stored under screenshots/.
    pub screenshot: Option<String>,
    /// It was a dry run: nothing was done.
    pub dry_run: bool,
    /// The worker's typed refusal (`{"refused": CODE, …}`), when it refused the call.
    pub refusal: Option<Value>,
    /// What the step acted on, for the step log only (`{"element": …}`, `{"elements": […]}`,
    /// `{"login": …}`): how an exported script finds it again (`export/`).
    pub acted_on: Option<Value>,
}

impl ToolOutcome {
    pub fn ok(value: Value) -> ToolOutcome {
        ToolOutcome::blocks(vec![Block::text(value.to_string())])
    }

    pub fn blocks(content: Vec<Block>) -> ToolOutcome {
        ToolOutcome {
            content,
            is_error: false,
            finish: None,
            stopped: false,
            screenshot: None,
            dry_run: false,
            refusal: None,
            acted_on: None,
        }
    }

    /// The code of the worker's refusal, if it refused (`form_unset`, `covered`, …).
    pub fn refused(&self) -> Option<Refusal> {
        Refusal::of(self.refusal.as_ref()?)
    }

    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome { is_error: true, ..ToolOutcome::blocks(vec![Block::text(message.into())]) }
    }

    /// The worker's description of what a step named (`acted_on`), taken out of its result
    /// (the model acts by refs and needs none of it).
    pub fn take_acted_on(data: &mut Value) -> Option<Value> {
        data.as_object_mut()?.remove("acted_on").filter(Value::is_object)
    }

    pub fn stopped() -> ToolOutcome {
        ToolOutcome { stopped: true, ..ToolOutcome::error("not run: the session was stopped") }
    }
}

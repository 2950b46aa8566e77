//! `text_call` (small profile, before a call, a repair; native tool calls only): a reply that
//! makes no tool call but whose text is one call to a tool this turn offers — a fenced JSON
//! block, `<tool_call>` tags, a bare object — runs as that call. Servers whose chat template is
//! not tool-aware (llama.cpp, Ollama with a plain template) hand a small model's call back as
//! text; read there, a nudge and a lost turn are saved. The same in every wire format: the
//! adapters only translate, and JSON action mode reads every reply as an action already.
//!
//! Invariant: a reply with a call of its own, a text that is no call, or one naming a tool not
//! offered is left as it is; at most one call is read from a reply.

use super::super::Agent;
use super::{Modes, Unit};
use crate::llm::{Block, Reply, StopReason, actions};
use crate::protocol::guards::Guard;

pub(in crate::agent) const UNIT: Unit = Unit {
    guard: Guard::TextCall,
    modes: Modes::NATIVE,
    evidence: "moved from the OpenAI adapter, where it ran in every profile (Anthropic and Gemini did not have \
               it). It fired in none of 27 native sessions on the local model this round (injection 14, \
               MiniWoB 9, own 4; 4e00e41 and 0652cf9); not yet ablated.",
};

/// The one call `reply`'s text writes to a tool in `offered`, as a call block (`id` its id).
fn call_in_text(reply: &Reply, offered: &[crate::llm::ToolDef], id: String) -> Option<Block> {
    if reply.content.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
        return None;
    }
    let text: String = reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    match actions::parse(&text, offered) {
        Ok(actions::Action::Tool { tool, args }) => Some(Block::tool_use(id, tool, args)),
        _ => None,
    }
}

impl Agent {
    /// The reply as it came: a call written as its text becomes that call.
    pub(in crate::agent) fn text_call(&mut self, reply: &mut Reply) {
        let (listed, unlisted) = self.turn_tools();
        let offered: Vec<_> = listed.into_iter().chain(unlisted).collect();
        let Some(call) = call_in_text(reply, &offered, format!("call_{}_text", self.turn)) else { return };
        if let Block::ToolUse { name, .. } = &call {
            self.fire(Guard::TextCall, &format!("a call written as text read as {name}"));
        }
        reply.content.push(call);
        reply.stop_reason = StopReason::ToolUse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{TokenUsage, ToolDef};
    use serde_json::json;

    fn reply(content: Vec<Block>) -> Reply {
        Reply {
            content,
            stop_reason: StopReason::EndTurn,
            usage: TokenUsage::default(),
            loose_action: false,
            corrected: None,
        }
    }

    #[test]
    fn guard_text_call_reads_one_offered_call_and_leaves_the_rest() {
        let offered = [ToolDef { name: "browser_click", description: "", input_schema: json!({"type": "object"}) }];
        let id = || "call_1_text".to_string();
        let fenced = reply(vec![Block::text(
            "I will press it.\n```json\n{\"name\": \"browser_click\", \"arguments\": {\"selector\": \"ref=e3\"}}\n```",
        )]);
        let Some(Block::ToolUse { name, input, .. }) = call_in_text(&fenced, &offered, id()) else { panic!() };
        assert_eq!((name.as_str(), input), ("browser_click", json!({"selector": "ref=e3"})));
        let unknown = reply(vec![Block::text("<tool_call>{\"name\": \"run_command\", \"arguments\": {}}</tool_call>")]);
        assert!(call_in_text(&unknown, &offered, id()).is_none(), "a tool not offered");
        assert!(call_in_text(&reply(vec![Block::text("The page says 42.")]), &offered, id()).is_none());
        let own = reply(vec![
            Block::text("{\"name\": \"browser_click\", \"arguments\": {}}"),
            Block::tool_use("c1", "browser_click", json!({"selector": "ref=e1"})),
        ]);
        assert!(call_in_text(&own, &offered, id()).is_none(), "a reply with a call of its own");
    }
}

//! A session a restart interrupted goes on from its journal (`POST /resume`): the conversation
//! as it was, with the calls the restart left open answered "interrupted", its compaction and
//! its turn; then the model is told the controller restarted, with the page opened again where
//! it was (browser sessions), since the worker's browser may have lost it.

use super::Agent;
use crate::llm::{Block, Message, Role};
use crate::protocol::SessionType;
use crate::protocol::tools::Tool;
use crate::session::close_open_calls;
use serde_json::{Value, json};

impl Agent {
    /// Restore the conversation of a resumed session; false for a new one.
    pub(super) fn resume_from_journal(&mut self) -> bool {
        let Some(conversation) = self.runner.resumed_conversation() else { return false };
        let Some(journaled) = messages_of(&conversation["messages"]) else { return false };
        if journaled.is_empty() {
            return false;
        }
        let summary = conversation["compacted"]["summary"].as_str().map(|text| {
            let replaced = conversation["compacted"]["replaced_messages"].as_u64().unwrap_or(0) as usize;
            (replaced, text.to_string())
        });
        self.journaled = super::report::Journaled::resumed(&journaled, summary.as_ref().map(|(n, _)| *n));
        let mut closed = conversation["messages"].clone();
        close_open_calls(&mut closed);
        self.messages = messages_of(&closed).unwrap_or(journaled);
        self.summary = summary;
        self.turn = self.record.turn;
        for message in &self.messages {
            self.grounding.saw(&crate::llm::joined_text(&message.content, "\n"));
        }
        self.tell_restarted();
        true
    }

    /// The model learns the controller restarted; a browser session's page is opened again.
    fn tell_restarted(&mut self) {
        let said = "The controller restarted; this session goes on where it was.";
        // A new agent has a new nonce (the old results keep the old one): said before any new result.
        let markers = self.boundary.prompt_line();
        if self.record.session_type != SessionType::Browser {
            self.push_user_text(format!(
                "{said} The target may have changed meanwhile: look before you act.\n{markers}"
            ));
            return;
        }
        let url = self.last_url().unwrap_or_else(|| self.record.target.clone());
        let outcome = self.run_tool(Tool::BrowserNavigate.name(), &json!({"url": url}));
        let mut blocks =
            vec![Block::text(format!("{said}\n{markers}\nThe page was opened again; it may have changed:"))];
        blocks.extend(outcome.content);
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.extend(blocks),
            _ => self.messages.push(Message::user(blocks)),
        }
        self.journal_conversation();
    }

    /// The page the session was last on, from the newest result that names one.
    fn last_url(&self) -> Option<String> {
        self.messages.iter().rev().flat_map(|m| m.content.iter().rev()).find_map(|block| {
            let Block::ToolResult { content, .. } = block else { return None };
            content.iter().find_map(|b| match b {
                Block::Text { text } => url_in(text),
                _ => None,
            })
        })
    }
}

/// The journal's messages read back by hand (a serde reader for `Message` would add its
/// tagged-enum machinery to the daemon's binary for this one use).
fn messages_of(list: &Value) -> Option<Vec<Message>> {
    list.as_array()?.iter().map(message_of).collect()
}

fn message_of(v: &Value) -> Option<Message> {
    let role = match v["role"].as_str()? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    Some(Message { role, content: blocks_of(&v["content"])? })
}

fn blocks_of(list: &Value) -> Option<Vec<Block>> {
    list.as_array()?.iter().map(block_of).collect()
}

fn block_of(b: &Value) -> Option<Block> {
    let text = |key: &str| b[key].as_str().map(str::to_string);
    Some(match b["type"].as_str()? {
        "text" => Block::Text { text: text("text")? },
        "tool_use" => Block::ToolUse {
            id: text("id")?,
            name: text("name")?,
            input: b["input"].clone(),
            signature: text("signature"),
        },
        "tool_result" => Block::ToolResult {
            tool_use_id: text("tool_use_id")?,
            content: blocks_of(&b["content"])?,
            is_error: b["is_error"].as_bool().unwrap_or(false),
        },
        // The journal holds no image data (`without_image_data`); a stray one is named.
        _ => Block::text("[image, stored under screenshots/]"),
    })
}

/// The URL a result names: its JSON line's `"url"`, else its snapshot's head line.
fn url_in(text: &str) -> Option<String> {
    let mut lines = super::boundary::Boundary::inner(text).lines();
    let first = lines.next()?;
    let head: Value = serde_json::from_str(first).unwrap_or_default();
    let url = match head["url"].as_str() {
        Some(url) => url,
        None => std::iter::once(first).chain(lines.next()).find_map(super::snapshot::page_url)?,
    };
    (url.starts_with("http://") || url.starts_with("https://")).then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journaled_messages_read_back_as_they_were_written() {
        let messages = vec![
            Message::user(vec![Block::text("go")]),
            Message::assistant(vec![Block::ToolUse {
                id: "t1".into(),
                name: "x".into(),
                input: json!({"a": 1}),
                signature: None,
            }]),
            Message::user(vec![Block::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![Block::text("ok")],
                is_error: true,
            }]),
        ];
        let written = serde_json::to_value(&messages).unwrap();
        assert_eq!(messages_of(&written), Some(messages));
        assert_eq!(messages_of(&json!([{"role": "system", "content": []}])), None);
    }

    #[test]
    fn the_url_of_a_result_is_read_from_its_json_line() {
        assert_eq!(
            url_in("{\"url\":\"https://h/a\",\"title\":\"A\"}\n- link \"B\" [ref=e1]").as_deref(),
            Some("https://h/a")
        );
        assert_eq!(url_in("{\"url\":\"about:blank\"}"), None);
        assert_eq!(url_in("page text"), None);
        let page = "Page: \"A — B\" — https://h/a?b (HTTP 200) — part 2 of 3\n[e1] link \"B\"";
        assert_eq!(url_in(page).as_deref(), Some("https://h/a?b"));
        assert_eq!(url_in(&format!("{{\"clicked\":\"a\"}}\n{page}")).as_deref(), Some("https://h/a?b"));
    }
}

//! Context care: what a tool result looks like to the model, and what stays in its context.
//!
//! Screenshots from a result are stored under `screenshots/` and handed over as image blocks
//! (only the newest `agent.keep_screenshots` stay in the context; older ones become a stub);
//! a text over `agent.max_tool_output_chars` is stored and described (`outputs.rs`); the
//! conversation on disk holds no image data.

use super::Agent;
use super::outcome::ToolOutcome;
use super::outputs::Stats;
use crate::exec::Answer;
use crate::llm::{Block, Message, Reply, Role};
use crate::protocol::{FileKind, SessionType};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The Messages API's per-image limit, measured on the base64 text.
const MAX_IMAGE_BASE64: usize = 5_000_000;

impl Agent {
    /// A worker result for the model: screenshots become stored PNGs plus an image block; long
    /// text is stored as a file and previewed.
    pub(super) fn result_blocks(&mut self, name: &str, mut answer: Answer) -> ToolOutcome {
        let data = &mut answer.tree;
        let (images, screenshot) = self.image_blocks(data);
        if let Some(map) = data.as_object_mut() {
            map.remove("full_png_base64");
            if map.remove("image_base64").is_some() {
                map.insert("image".into(), json!("attached"));
            }
        }
        let sign_in = data.as_object_mut().and_then(|d| d.remove("sign_in")) == Some(json!(true));
        let page = self.take_page(data).or_else(|| super::snapshot::take_changes(data));
        // Only a result without a page is its tree's JSON text (or, a string, the text itself;
        // or the text a large member was kept as, read again only for its shape).
        let shape = match (&answer.tree, &page, &answer.bulk) {
            (_, Some(_), _) => Stats::Text,
            (Value::String(_), None, None) | (_, None, Some(_)) => Stats::Parse,
            (_, None, None) => Stats::Tree(Value::Null),
        };
        let text = super::snapshot::render(&mut answer, page);
        let max = self.runner.config().agent.max_tool_output_chars;
        let text = if text.chars().count() > max {
            // The tree serves the stored output's description; the answer goes before the text
            // is saved.
            let stats = match shape {
                Stats::Tree(_) => Stats::Tree(std::mem::take(&mut answer.tree)),
                other => other,
            };
            drop(answer);
            self.persist_output(name, &text, stats)
        } else {
            self.boundary.wrap(&text)
        };
        let mut content = vec![Block::text(text)];
        content.extend(self.walk_read(&super::guards::Reading { sign_in }).into_iter().map(Block::text));
        content.extend(images);
        ToolOutcome { screenshot, ..ToolOutcome::blocks(content) }
    }

    /// Store a result's screenshot under screenshots/ and return what the model gets: the
    /// image, or (desktop sessions) a note when it is the very frame sent before. Also the
    /// stored file's name, for the step log.
    pub(super) fn image_blocks(&mut self, data: &Value) -> (Vec<Block>, Option<String>) {
        let Some(encoded) = data["image_base64"].as_str() else { return (Vec::new(), None) };
        let media_type = data["media_type"].as_str().unwrap_or("image/png").to_string();
        let bytes = match STANDARD.decode(encoded) {
            Ok(bytes) => bytes,
            Err(e) => return (vec![Block::text(format!("(the screenshot could not be decoded: {e})"))], None),
        };
        let stored = self.store_frame(data, &bytes, &media_type);
        if !self.sees_images() {
            let name = stored.clone().unwrap_or_default();
            let text = format!(
                "(screenshot saved as {name}; this model cannot see images: read the page with browser_snapshot)"
            );
            return (vec![Block::text(text)], stored);
        }
        if self.record.session_type == SessionType::App {
            let hash = frame_hash(&bytes);
            if let Some((_, step)) = self.last_frame.filter(|(h, _)| *h == hash) {
                self.runner.count_image(false, 0, 0, 0);
                let note =
                    format!("(the screen is unchanged since step {step}: the same screenshot is not sent again)");
                return (vec![Block::text(note)], stored);
            }
            self.last_frame = Some((hash, self.step));
        }
        // The API refuses images over 5 MB (of base64) and would end the session.
        if encoded.len() > MAX_IMAGE_BASE64 {
            let name = stored.clone().unwrap_or_default();
            let text = format!(
                "(the screenshot is too large to show: {} MB; saved as {name}. Take a viewport screenshot instead.)",
                bytes.len() / (1024 * 1024)
            );
            return (vec![Block::text(text)], stored);
        }
        let (w, h) = (data["width"].as_u64().unwrap_or(0), data["height"].as_u64().unwrap_or(0));
        self.runner.count_image(true, bytes.len() as u64, w, h);
        (vec![Block::Image { media_type, data: encoded.to_string() }], stored)
    }

    /// Keep the frame: the full-resolution PNG when the worker sent one (desktop), else the
    /// image itself.
    fn store_frame(&self, data: &Value, image: &[u8], media_type: &str) -> Option<String> {
        let full = data["full_png_base64"].as_str().and_then(|b| STANDARD.decode(b).ok());
        let ext = if full.is_none() && media_type == "image/jpeg" { "jpg" } else { "png" };
        let name = format!("step_{:04}.{ext}", self.turn);
        match self.runner.store_file(&name, full.as_deref().unwrap_or(image), FileKind::Screenshot) {
            Ok(f) => Some(f.filename),
            Err(e) => {
                log::warn!("{}: screenshot not stored: {e}", self.runner.session_id());
                None
            }
        }
    }
}

/// Identical frames have identical bytes (the worker encodes deterministically).
fn frame_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The first text block, without the boundary's markers: what the target said.
pub(super) fn first_text(blocks: &[Block]) -> String {
    super::boundary::Boundary::inner(first_text_marked(blocks)).to_string()
}

/// The first text block as the model saw it, markers and all.
pub(super) fn first_text_marked(blocks: &[Block]) -> &str {
    blocks
        .iter()
        .find_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

pub(super) fn last_text(reply: &Reply) -> String {
    reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.trim()),
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Keep only the newest `keep` images in the context; older ones become a short stub.
pub fn trim_images(messages: &mut [Message], keep: usize) {
    let mut seen = 0;
    for message in messages.iter_mut().rev() {
        if message.role != Role::User {
            continue;
        }
        for block in message.content.iter_mut().rev() {
            let inner: &mut Vec<Block> = match block {
                Block::ToolResult { content, .. } => content,
                _ => continue,
            };
            for b in inner.iter_mut().rev() {
                if matches!(b, Block::Image { .. }) {
                    seen += 1;
                    if seen > keep {
                        *b = Block::text("[an earlier screenshot was removed from the context to save space]");
                    }
                }
            }
        }
    }
}

/// The conversation as stored on disk: images are in screenshots/, not inlined.
/// Borrowed when the message has no image, which is most of them.
pub(super) fn without_image_data(m: &Message) -> std::borrow::Cow<'_, Message> {
    fn has_image(b: &Block) -> bool {
        match b {
            Block::Image { .. } => true,
            Block::ToolResult { content, .. } => content.iter().any(has_image),
            _ => false,
        }
    }
    if !m.content.iter().any(has_image) {
        return std::borrow::Cow::Borrowed(m);
    }
    fn strip(b: &Block) -> Block {
        match b {
            Block::Image { media_type, .. } => Block::text(format!("[image {media_type}, stored under screenshots/]")),
            Block::ToolResult { tool_use_id, content, is_error } => Block::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: content.iter().map(strip).collect(),
                is_error: *is_error,
            },
            other => other.clone(),
        }
    }
    std::borrow::Cow::Owned(Message { role: m.role, content: m.content.iter().map(strip).collect() })
}

//! Models without vision. An endpoint's `vision` says whether its model reads images: with
//! `false` no image is ever sent (a screenshot is stored and named in words); with `auto` the
//! first API error saying images are unsupported drops every image from the conversation,
//! retries that call once, and the session goes on text-only (snapshots, not screenshots), with
//! a line in the system prompt saying so. `true` sends images and never drops them.

use super::Agent;
use crate::config::Vision;
use crate::llm::{Block, LlmError, Message, Reply};
use crate::protocol::LogKind;

/// Said in the system prompt of a session whose model reads no images.
pub(super) const TEXT_ONLY: &str = "This model cannot see images: do not take screenshots; read pages with \
browser_snapshot (desktop: get_ui_tree) instead.";

/// Replace every image in the conversation by a line saying it was left out.
fn drop_images(messages: &mut [Message]) -> usize {
    fn strip(blocks: &mut [Block]) -> usize {
        let mut n = 0;
        for b in blocks.iter_mut() {
            match b {
                Block::Image { .. } => {
                    *b = Block::text("[a screenshot was left out: this model cannot read images]");
                    n += 1;
                }
                Block::ToolResult { content, .. } => n += strip(content),
                _ => {}
            }
        }
        n
    }
    messages.iter_mut().map(|m| strip(&mut m.content)).sum()
}

impl Agent {
    /// Whether images may go to the model at all.
    pub(super) fn sees_images(&self) -> bool {
        self.vision != Vision::Off
    }

    /// One model call; under `auto`, an error saying images are unsupported makes the session
    /// text-only and the call is made once more without them.
    pub(super) fn call_model_seeing(&mut self) -> Result<Reply, LlmError> {
        let first = self.call_model();
        let refused = matches!(first, Err(LlmError::ImagesUnsupported(_)));
        if !refused || self.vision != Vision::Auto {
            return first;
        }
        let dropped = drop_images(&mut self.messages);
        if dropped == 0 {
            return first;
        }
        self.vision = Vision::Off;
        self.system = format!("{}\n\n{TEXT_ONLY}", self.system);
        self.runner.log(
            LogKind::System,
            &format!("the model takes no images: {dropped} left out, the session goes on text-only"),
            None,
        );
        self.call_model()
    }
}

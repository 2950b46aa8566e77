//! A session's recording: the frames its agent stores after each acting step (one-frame GIFs
//! the worker made, masked there), and `GET /sessions/:id/recording`, the animation made of
//! them (`util/gif.rs`: the daemon concatenates, it does not encode).
//!
//! Guarantees: a frame is stored only when it is a whole GIF, and only within the session's
//! storage (`files.max_session_storage_mb`, which its bytes count toward); the animation holds
//! at most `MAX_FRAMES` frames and about `MAX_BYTES`, frames thinned evenly past either bound
//! (the first and the last kept); a session not recorded is not found, saying why.

use super::Session;
use super::error::SessionError;
use crate::protocol::SessionType;
use crate::util::gif;

/// The most frames one animation shows.
pub const MAX_FRAMES: usize = 300;
/// About the largest animation served (the frames chosen add up to at most this).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

impl Session {
    /// Keep step `step`'s frame.
    pub fn store_frame(&self, step: u64, bytes: &[u8]) -> Result<(), SessionError> {
        if gif::frame(bytes).is_none() {
            return Err(SessionError::Invalid("the worker's frame is not a whole GIF".into()));
        }
        self.within_storage(bytes.len() as u64, || self.dir.write_frame(step, bytes))
    }

    /// The recording as one animated GIF, or not found: not recorded, or nothing recorded yet.
    pub fn recording_gif(&self) -> Result<Vec<u8>, SessionError> {
        let record = self.record();
        if record.session_type == SessionType::Shell {
            return Err(SessionError::NotFound(format!(
                "session {} is a shell session: only browser and desktop sessions are recorded",
                self.id
            )));
        }
        if record.options.recording == Some(false) {
            return Err(SessionError::NotFound(format!("session {} is not recorded (recording: false)", self.id)));
        }
        let all = self.dir.frames();
        let mut keep = all.len().min(MAX_FRAMES);
        let chosen = loop {
            let picked = gif::thin(all.len(), keep);
            let total: u64 = picked.iter().map(|&i| all[i].1).sum();
            if total <= MAX_BYTES || keep <= 1 {
                break picked;
            }
            // Fewer in proportion, and at least one fewer.
            keep = ((keep as u64 * MAX_BYTES / total) as usize).clamp(1, keep - 1);
        };
        let frames: Vec<(Vec<u8>, gif::Frame)> = chosen
            .into_iter()
            .filter_map(|i| std::fs::read(&all[i].0).ok())
            .filter_map(|bytes| gif::frame(&bytes).map(|f| (bytes, f)))
            .collect();
        if frames.is_empty() {
            return Err(SessionError::NotFound(format!("session {} has no recorded step yet", self.id)));
        }
        Ok(gif::animate(&frames))
    }
}

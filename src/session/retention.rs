//! Deleting sessions: `DELETE /sessions/{id}?purge=true` (an ended session whose thread has
//! returned; a conflict otherwise) and the retention rules, applied at start and then periodically:
//! ended sessions older than `output.retain_days`, then the oldest ended ones while the total
//! passes `output.max_total_mb`. A running session is never deleted. Each deletion is logged.

use super::error::SessionError;
use super::manager::SessionManager;
use super::{Session, lock};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const MB: u64 = 1024 * 1024;

impl SessionManager {
    /// Delete an ended session and its folder.
    pub fn purge(&self, id: &str) -> Result<(), SessionError> {
        let mut sessions = lock(&self.sessions);
        let session = sessions.get(id).cloned().ok_or_else(|| SessionError::no_session(id))?;
        let status = session.status();
        if status.is_active() || lock(&self.threads.live).contains(id) {
            return Err(SessionError::Conflict(format!(
                "session {id} is still {}: stop it first (DELETE without purge), then purge it",
                status.as_str()
            )));
        }
        // The rename makes it vanish at once; the map follows only if it did. The slow part,
        // deleting the contents, runs after the manager's lock is released.
        let doomed = self.store.unlink_session(id).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SessionError::no_session(id),
            _ => SessionError::Internal(format!("cannot delete session {id}: {e}")),
        })?;
        sessions.remove(id);
        drop(sessions);
        if let Err(e) = std::fs::remove_dir_all(&doomed) {
            log::warn!("{id}: deleted, but its folder is not all gone ({e}); removed at the next start");
        }
        Ok(())
    }

    /// Whether `output.retain_days` or `output.max_total_mb` asks for pruning at all.
    pub fn retention_set(&self) -> bool {
        self.config.output.retain_days > 0 || self.config.output.max_total_mb > 0
    }

    /// Apply `output.retain_days` and `output.max_total_mb`; how many sessions were deleted.
    pub fn prune(&self) -> usize {
        let output = &self.config.output;
        if !self.retention_set() {
            return 0;
        }
        // Oldest first: ids are creation time stamps.
        let all: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        let cap = output.max_total_mb.saturating_mul(MB);
        // Sizes mean a walk of every folder: only for a cap.
        let sizes: Vec<u64> = all.iter().map(|s| if cap > 0 { s.dir.disk_usage() } else { 0 }).collect();
        let mut total: u64 = sizes.iter().sum();
        let cutoff = (output.retain_days > 0)
            .then(|| SystemTime::now().checked_sub(Duration::from_secs(output.retain_days.saturating_mul(86_400))))
            .flatten();
        let mut deleted = 0;
        for (session, size) in all.iter().zip(sizes) {
            let too_old = cutoff.is_some_and(|c| session.dir.last_written().is_some_and(|t| t < c));
            let over = cap > 0 && total > cap;
            if !(too_old || over) || session.status().is_active() {
                continue;
            }
            let why = if too_old {
                format!("ended more than {} days ago (output.retain_days)", output.retain_days)
            } else {
                format!("the sessions use {} MiB, over output.max_total_mb {}", total / MB, output.max_total_mb)
            };
            match self.purge(&session.id) {
                Ok(()) => {
                    log::info!("{}: deleted ({} KiB): {why}", session.id, size / 1024);
                    total = total.saturating_sub(size);
                    deleted += 1;
                }
                Err(e) => log::debug!("{}: not pruned: {e}", session.id),
            }
        }
        deleted
    }
}

//! A failed write to the session's folder. Most are logged and the session goes on; a full
//! disk (ENOSPC, EDQUOT) ends the session `error`, naming the cause, since nothing it does next
//! could be recorded. Creating a session on a full disk is refused (`SessionError::disk_full`).

use super::Session;
use crate::protocol::Status;
use std::io;

/// Whether an I/O error means the disk (or the quota) is full.
pub fn is_full(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
}

impl Session {
    /// Report a failed write of `what`; on a full disk, end the session with the cause.
    /// Callers hold no session lock.
    pub(super) fn write_failed(&self, what: &str, e: &io::Error) {
        ::log::error!("{}: cannot write {what}: {e}", self.id);
        if is_full(e) {
            let reason = format!("the controller's disk is full: cannot write {what}: {e}");
            if self.end_from_outside(Status::Error, Some(reason)) {
                ::log::error!("{}: ended: the disk is full", self.id);
            }
        }
    }
}

//! A session's log: `log.jsonl` on disk, line offsets in memory, and the long polls waiting
//! for the next entry.
//!
//! Entries are scrubbed of the vault's secrets before they are written. The log lock orders
//! appends (an entry's `seq` is its line number) and is held for the append only; waiting
//! polls are answered after it is released.

use super::{Session, lock};
use crate::protocol::{LogEntry, LogKind, LogPage};
use crate::util::clock;
use crate::wait::park::{ParkKey, Responder};
use serde_json::Value;
use std::time::Duration;

/// Most log entries returned by one `GET /log`.
const LOG_PAGE_MAX: usize = 500;
/// Longest `wait` a log poll may ask for.
pub const LOG_WAIT_MAX: Duration = Duration::from_secs(60);

pub(super) struct LogState {
    /// Byte offset of each line of log.jsonl; `None` until first needed.
    offsets: Option<Vec<u64>>,
    waiters: Vec<(ParkKey, u64)>,
}

impl LogState {
    pub(super) fn new(fresh: bool) -> LogState {
        LogState { offsets: fresh.then(Vec::new), waiters: Vec::new() }
    }
}

impl Session {
    fn log_offsets<'a>(&self, state: &'a mut LogState) -> &'a mut Vec<u64> {
        state.offsets.get_or_insert_with(|| {
            self.dir.index_log().unwrap_or_else(|e| {
                ::log::error!("{}: cannot read log.jsonl: {e}", self.id);
                Vec::new()
            })
        })
    }

    /// Append a log entry (secrets scrubbed) and answer everyone long-polling for it.
    pub fn log(&self, kind: LogKind, text: &str, data: Option<Value>) -> u64 {
        let (text, data) = {
            let vault = self.vault();
            let mut data = data;
            if let Some(d) = data.as_mut() {
                vault.scrub_json(d);
            }
            (vault.scrub(text), data)
        };
        let mut state = lock(&self.log);
        let offsets = self.log_offsets(&mut state);
        let seq = offsets.len() as u64 + 1;
        let entry = LogEntry { seq, ts: clock::rfc3339_millis(clock::now()), kind, text, data };
        let line = serde_json::to_string(&entry).unwrap_or_default();
        let failed = match self.dir.append_log_line(&line) {
            Ok(offset) => {
                offsets.push(offset);
                None
            }
            Err(e) => Some(e),
        };
        let waiters = std::mem::take(&mut state.waiters);
        drop(state);
        if let Some(e) = failed {
            self.write_failed("log.jsonl", &e);
        }
        self.answer_log_waiters(waiters);
        seq
    }

    fn answer_log_waiters(&self, waiters: Vec<(ParkKey, u64)>) {
        for (key, after) in waiters {
            if let Some(respond) = self.parker.take(key) {
                respond(200, serde_json::to_vec(&self.read_log(after)).unwrap_or_default());
            }
        }
    }

    /// Answer every waiting poll (the session has ended: nothing more will come).
    pub(super) fn end_log_waiters(&self) {
        let waiters = std::mem::take(&mut lock(&self.log).waiters);
        self.answer_log_waiters(waiters);
    }

    pub fn read_log(&self, after: u64) -> LogPage {
        let mut state = lock(&self.log);
        let offsets = self.log_offsets(&mut state);
        let total = offsets.len() as u64;
        if after >= total {
            return LogPage { entries: Vec::new(), next: after.max(total) };
        }
        let from = offsets[after as usize];
        drop(state);
        let lines = self.dir.read_log_lines(from, LOG_PAGE_MAX).unwrap_or_else(|e| {
            ::log::error!("{}: cannot read log.jsonl: {e}", self.id);
            Vec::new()
        });
        let entries: Vec<LogEntry> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let next = entries.last().map(|e| e.seq).unwrap_or(after);
        LogPage { entries, next }
    }

    /// Entries mentioning `query` (case-insensitive), at most `max`, the most recent ones.
    pub fn search_log(&self, query: &str, max: usize) -> Vec<LogEntry> {
        let needle = query.to_lowercase();
        let mut hits = Vec::new();
        let mut after = 0;
        loop {
            let page = self.read_log(after);
            if page.entries.is_empty() {
                break;
            }
            after = page.next;
            for e in page.entries {
                let data = e.data.as_ref().map(|d| d.to_string()).unwrap_or_default();
                if e.text.to_lowercase().contains(&needle) || data.to_lowercase().contains(&needle) {
                    hits.push(e);
                }
            }
        }
        let skip = hits.len().saturating_sub(max);
        hits.split_off(skip)
    }

    /// `GET /log?wait=S`: answer now if there is something after `after` or the session has
    /// ended, else park until the next entry or the deadline.
    pub fn log_long_poll(&self, respond: Responder, after: u64, wait: Duration) {
        let mut state = lock(&self.log);
        let total = self.log_offsets(&mut state).len() as u64;
        if total > after || !self.status().is_active() || wait.is_zero() {
            drop(state);
            respond(200, serde_json::to_vec(&self.read_log(after)).unwrap_or_default());
            return;
        }
        let empty = serde_json::to_vec(&LogPage { entries: Vec::new(), next: after }).unwrap_or_default();
        match self.parker.park(respond, wait.min(LOG_WAIT_MAX), empty) {
            Ok(key) => state.waiters.push((key, after)),
            Err((respond, status, body)) => {
                drop(state);
                respond(status, body);
            }
        }
    }
}

//! The `Parker`: long-poll answers waiting for an event or their deadline, without a thread
//! each.
//!
//! A parked answer is a `Responder`, a closure that sends one JSON body with its status. It is
//! taken exactly once: by the event it waits for (`take`), by the reaper when its deadline
//! passes (answered with the status and body given at park time), or by `close` at shutdown. After `close`, new parks are
//! answered at once. The parker's lock is the innermost of the daemon: it is taken after the
//! hub's and a session's, never before, and no answer is sent while it is held.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Sends one JSON body with its HTTP status to whoever is waiting for it.
pub type Responder = Box<dyn FnOnce(u16, Vec<u8>) + Send>;

/// Identifies one parked answer.
pub type ParkKey = (Instant, u64);

/// A park refused at shutdown: the answer, and the status and body to send it, after unlocking.
pub type Unparked = (Responder, u16, Vec<u8>);

struct Parked {
    respond: Responder,
    status: u16,
    on_timeout: Vec<u8>,
}

#[derive(Default)]
struct ParkState {
    entries: BTreeMap<ParkKey, Parked>,
    next_id: u64,
    /// When the reaper wakes next by itself: a park due later needs no wake-up (with one
    /// worker polling, every park came after the last one was taken, and woke it each step).
    reaper_wakes: Option<Instant>,
}

/// Holds answers until an event takes them or their deadline passes; one reaper thread
/// answers the expired ones.
#[derive(Default)]
pub struct Parker {
    state: Mutex<ParkState>,
    changed: Condvar,
    closed: AtomicBool,
}

impl Parker {
    fn lock(&self) -> MutexGuard<'_, ParkState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Park `respond` for `timeout`; on expiry it gets `on_timeout` (status 200). After
    /// shutdown it is handed back with its body, for the caller to answer once its own locks
    /// are released.
    pub fn park(&self, respond: Responder, timeout: Duration, on_timeout: Vec<u8>) -> Result<ParkKey, Unparked> {
        self.park_with(respond, timeout, 200, on_timeout)
    }

    /// As `park`, answered `status` with `on_timeout` on expiry (an act's 503).
    pub fn park_with(
        &self,
        respond: Responder,
        timeout: Duration,
        status: u16,
        on_timeout: Vec<u8>,
    ) -> Result<ParkKey, Unparked> {
        let mut state = self.lock();
        // Checked under the lock `close` takes: a park cannot slip in after the last reap.
        if self.closed.load(Ordering::Acquire) {
            return Err((respond, status, on_timeout));
        }
        state.next_id += 1;
        let deadline =
            Instant::now().checked_add(timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        let key = (deadline, state.next_id);
        let sooner = state.reaper_wakes.is_none_or(|at| deadline < at);
        state.entries.insert(key, Parked { respond, status, on_timeout });
        drop(state);
        if sooner {
            self.changed.notify_one();
        }
        Ok(key)
    }

    /// Take a parked answer to use it now; `None` if it already timed out.
    pub fn take(&self, key: ParkKey) -> Option<Responder> {
        self.lock().entries.remove(&key).map(|p| p.respond)
    }

    pub fn contains(&self, key: ParkKey) -> bool {
        self.lock().entries.contains_key(&key)
    }

    /// The reaper loop; returns after `close`.
    pub fn run_reaper(&self) {
        let mut state = self.lock();
        loop {
            let closed = self.closed.load(Ordering::Acquire);
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = state.entries.first_entry() {
                if closed || entry.key().0 <= now {
                    due.push(entry.remove());
                } else {
                    break;
                }
            }
            if !due.is_empty() {
                drop(state);
                for p in due {
                    (p.respond)(p.status, p.on_timeout);
                }
                state = self.lock();
                continue;
            }
            if closed {
                return;
            }
            let wait = state
                .entries
                .keys()
                .next()
                .map(|k| k.0.saturating_duration_since(now))
                .unwrap_or(Duration::from_secs(3600));
            state.reaper_wakes = now.checked_add(wait);
            state = self.changed.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
            state.reaper_wakes = None;
        }
    }

    /// Answer everything parked and stop the reaper; later parks are answered at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _guard = self.lock();
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn responder() -> (Responder, crossbeam_channel::Receiver<Vec<u8>>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (Box::new(move |_, body| drop(tx.send(body))), rx)
    }

    #[test]
    fn an_answer_is_taken_once_or_reaped_at_its_deadline() {
        let parker = Arc::new(Parker::default());
        let reaper = {
            let p = Arc::clone(&parker);
            std::thread::spawn(move || p.run_reaper())
        };
        let (r1, rx1) = responder();
        let key = parker.park(r1, Duration::from_secs(60), b"late".to_vec()).ok().unwrap();
        let (r2, rx2) = responder();
        let started = Instant::now();
        parker.park(r2, Duration::from_millis(50), b"timeout".to_vec()).ok().unwrap();
        assert_eq!(rx2.recv_timeout(Duration::from_secs(5)).unwrap(), b"timeout");
        assert!(started.elapsed() >= Duration::from_millis(50));
        (parker.take(key).unwrap())(200, b"event".to_vec());
        assert!(parker.take(key).is_none(), "taken once");
        assert_eq!(rx1.recv().unwrap(), b"event");
        // A later park while the reaper sleeps toward an earlier deadline (taken meanwhile):
        // no wake-up for it, and it is still reaped on time.
        let (r5, _rx5) = responder();
        let early = parker.park(r5, Duration::from_millis(50), b"taken".to_vec()).ok().unwrap();
        let (r6, rx6) = responder();
        let started = Instant::now();
        parker.park(r6, Duration::from_millis(120), b"later".to_vec()).ok().unwrap();
        drop(parker.take(early));
        assert_eq!(rx6.recv_timeout(Duration::from_secs(5)).unwrap(), b"later");
        assert!(started.elapsed() >= Duration::from_millis(120));
        let (r3, rx3) = responder();
        parker.park(r3, Duration::from_secs(60), b"closed".to_vec()).ok().unwrap();
        parker.close();
        assert_eq!(rx3.recv_timeout(Duration::from_secs(5)).unwrap(), b"closed");
        reaper.join().unwrap();
        let (r4, rx4) = responder();
        let (respond, status, body) = parker.park(r4, Duration::from_secs(60), b"at once".to_vec()).err().unwrap();
        respond(status, body);
        assert_eq!(rx4.recv().unwrap(), b"at once");
    }
}

//! `StopSignal`: a session's stop, raised once, seen at once by every wait it is in.
//!
//! A wait that sleeps on some other Condvar (a worker's result slot, a confirmation) registers
//! a waker for as long as it waits; `raise` sets the flag and then calls every registered waker,
//! so only the waits of this session wake, and none is missed: registration and raising take
//! the same lock, and a waiter checks the flag after registering. Waits that select over
//! channels (an LLM call, a notification) use `receiver()`, which disconnects when raised.

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Called when the signal is raised; must not block (it takes a lock and notifies).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

struct Wakers {
    next: u64,
    registered: Vec<(u64, Waker)>,
    /// Dropped on raise, which disconnects every `receiver()`.
    sender: Option<Sender<()>>,
}

pub struct StopSignal {
    raised: AtomicBool,
    wakers: Mutex<Wakers>,
    changed: Condvar,
    receiver: Receiver<()>,
}

/// Keeps a waker registered; dropping it unregisters.
pub struct WakeGuard<'a> {
    signal: &'a StopSignal,
    id: u64,
}

impl Drop for WakeGuard<'_> {
    fn drop(&mut self) {
        self.signal.lock().registered.retain(|(id, _)| *id != self.id);
    }
}

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal::new(false)
    }
}

impl StopSignal {
    /// A signal, already raised when `raised` (a session loaded from disk has ended).
    pub fn new(raised: bool) -> StopSignal {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        let signal = StopSignal {
            raised: AtomicBool::new(false),
            wakers: Mutex::new(Wakers { next: 0, registered: Vec::new(), sender: Some(sender) }),
            changed: Condvar::new(),
            receiver,
        };
        if raised {
            signal.raise();
        }
        signal
    }

    fn lock(&self) -> MutexGuard<'_, Wakers> {
        self.wakers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }

    /// Raise the signal and wake every registered wait; false when it was already raised.
    pub fn raise(&self) -> bool {
        let mut wakers = self.lock();
        if self.raised.swap(true, Ordering::AcqRel) {
            return false;
        }
        wakers.sender = None;
        let registered: Vec<Waker> = wakers.registered.iter().map(|(_, w)| Arc::clone(w)).collect();
        drop(wakers);
        self.changed.notify_all();
        for wake in registered {
            wake();
        }
        true
    }

    /// Call `waker` when the signal is raised, for as long as the guard lives. A wait
    /// registers first, then checks `is_raised`, then sleeps: no raise can fall in between.
    pub fn on_raise(&self, waker: Waker) -> WakeGuard<'_> {
        let mut wakers = self.lock();
        wakers.next += 1;
        let id = wakers.next;
        wakers.registered.push((id, waker));
        WakeGuard { signal: self, id }
    }

    /// A receiver that never yields a value and disconnects when the signal is raised: one
    /// arm of a `select!`.
    pub fn receiver(&self) -> Receiver<()> {
        self.receiver.clone()
    }

    /// Sleep until raised or `timeout`; true when raised.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut wakers = self.lock();
        loop {
            if self.is_raised() {
                return true;
            }
            let left = deadline.map_or(Duration::from_secs(3600), |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return false;
            }
            wakers = self.changed.wait_timeout(wakers, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn raise_wakes_registered_waits_and_disconnects_receivers() {
        let signal = Arc::new(StopSignal::default());
        let woken = Arc::new(AtomicUsize::new(0));
        let w = Arc::clone(&woken);
        let guard = signal.on_raise(Arc::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }));
        let w = Arc::clone(&woken);
        drop(signal.on_raise(Arc::new(move || {
            w.fetch_add(100, Ordering::SeqCst);
        })));
        let rx = signal.receiver();
        assert!(rx.recv_timeout(Duration::from_millis(10)).is_err());
        assert!(!signal.wait(Duration::from_millis(10)));
        let waiter = {
            let s = Arc::clone(&signal);
            std::thread::spawn(move || s.wait(Duration::from_secs(60)))
        };
        std::thread::sleep(Duration::from_millis(20));
        let started = Instant::now();
        assert!(signal.raise());
        assert!(!signal.raise(), "raised once");
        assert!(waiter.join().unwrap());
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(woken.load(Ordering::SeqCst), 1, "only the registered waker ran");
        assert!(matches!(rx.recv(), Err(crossbeam_channel::RecvError)));
        drop(guard);
        assert!(StopSignal::new(true).is_raised());
    }
}

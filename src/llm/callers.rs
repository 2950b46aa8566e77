//! The threads that make the model calls a session cannot make on its own thread: those that
//! need a lookup or a new connection, which a stop could not interrupt (the session selects
//! over the result and its stop, see `transport.rs`). Kept between calls: a fresh thread per
//! call cost a spawn and an exit.
//!
//! Invariant: `idle` counts threads that will take a queued job. A caller reserves one by
//! decrementing it before queueing; with none to reserve it starts a thread for its job. A
//! thread leaves only by winning the same decrement after `IDLE_LIMIT` without work, so a
//! queued job always has a thread coming for it, and a slow call never delays another.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// How long a thread with nothing to do stays.
const IDLE_LIMIT: Duration = Duration::from_secs(60);

pub struct Callers {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    idle: Arc<AtomicUsize>,
    idle_limit: Duration,
}

/// The process's callers.
pub fn shared() -> &'static Callers {
    static CALLERS: OnceLock<Callers> = OnceLock::new();
    CALLERS.get_or_init(|| Callers::new(IDLE_LIMIT))
}

impl Callers {
    fn new(idle_limit: Duration) -> Callers {
        let (jobs, queue) = crossbeam_channel::unbounded();
        Callers { jobs, queue, idle: Arc::new(AtomicUsize::new(0)), idle_limit }
    }

    /// Run `job` on an idle caller, or on a new one; Err if no thread could be started.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        if take_one(&self.idle) {
            // The channel is never closed: `self` holds both ends.
            let _ = self.jobs.send(Box::new(job));
            return Ok(());
        }
        let (queue, idle, limit) = (self.queue.clone(), Arc::clone(&self.idle), self.idle_limit);
        std::thread::Builder::new().name("llm-call".into()).spawn(move || {
            job();
            serve(&queue, &idle, limit);
        })?;
        Ok(())
    }
}

/// Take queued jobs until `limit` passes without one and this thread wins its way out.
fn serve(queue: &Receiver<Job>, idle: &AtomicUsize, limit: Duration) {
    idle.fetch_add(1, Ordering::AcqRel);
    loop {
        match queue.recv_timeout(limit) {
            Ok(job) => {
                job();
                idle.fetch_add(1, Ordering::AcqRel);
            }
            // Lost the race: a job was reserved against this count, so wait for it.
            Err(RecvTimeoutError::Timeout) if !take_one(idle) => {}
            Err(_) => return,
        }
    }
}

/// Decrement `idle` if it is above zero; whether it was.
fn take_one(idle: &AtomicUsize) -> bool {
    idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_of(callers: &Callers) -> std::thread::ThreadId {
        let (tx, rx) = crossbeam_channel::bounded(1);
        callers
            .run(move || {
                let _ = tx.send(std::thread::current().id());
            })
            .unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    /// Until a thread has counted itself idle again after a call, a new one would start.
    fn wait_idle(callers: &Callers, n: usize) {
        let t = std::time::Instant::now();
        while callers.idle.load(Ordering::Acquire) != n {
            assert!(t.elapsed() < Duration::from_secs(5), "never {n} idle");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn calls_one_after_another_reuse_one_thread() {
        let callers = Callers::new(Duration::from_secs(5));
        let first = thread_of(&callers);
        for _ in 0..20 {
            wait_idle(&callers, 1);
            assert_eq!(thread_of(&callers), first);
        }
    }

    #[test]
    fn a_slow_call_never_delays_another_and_idle_threads_leave() {
        let callers = Callers::new(Duration::from_millis(100));
        let (release, held) = crossbeam_channel::bounded::<()>(0);
        let slow = thread_of(&callers);
        wait_idle(&callers, 1);
        callers
            .run(move || {
                let _ = held.recv();
            })
            .unwrap();
        // `thread_of` waits at most 5 s; the slow call waits for ever until released.
        let other = thread_of(&callers);
        release.send(()).unwrap();
        assert_ne!(slow, other);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(callers.idle.load(Ordering::Acquire), 0, "idle threads stay past the limit");
        thread_of(&callers);
    }
}

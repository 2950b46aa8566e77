//! While a command runs, a side thread tells the controller the worker is alive
//! (`POST /heartbeat`), so a worker that dies mid-command is noticed within the controller's
//! `worker_timeout_s` instead of the command's whole timeout. The first beat goes after 1 s
//! (short commands send none), then at the interval the controller answers with. A controller
//! without the route (404) gets no more beats for this command.

use crate::link::{Link, LinkError};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

const FIRST: Duration = Duration::from_secs(1);
const LONGEST: Duration = Duration::from_secs(30);

/// The running heartbeat; dropping it stops the beats (the thread ends on its own).
pub struct Beat {
    _stop: Option<Sender<()>>,
}

/// Start beating for one command.
pub fn start(link: Link) -> Beat {
    let (stop, stopped) = mpsc::channel::<()>();
    let spawned = std::thread::Builder::new().name("heartbeat".into()).stack_size(256 * 1024).spawn(move || {
        let mut wait = FIRST;
        // Any message or a dropped sender ends the beats.
        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
            match link.heartbeat() {
                Ok(answer) => {
                    let every = answer["interval_s"].as_u64().unwrap_or(5).max(1);
                    wait = Duration::from_secs(every).min(LONGEST);
                }
                Err(LinkError::Unknown) => return,
                Err(_) => wait = FIRST,
            }
        }
    });
    Beat { _stop: spawned.ok().map(|_| stop) }
}

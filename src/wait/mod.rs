//! The two waiting primitives the daemon is built on; every wait it makes is bounded and ends
//! on a stop.
//!
//! - [`park::Parker`] holds long-poll answers (`GET /command`, `GET /log?wait=`) without a
//!   thread each: whoever the awaited event reaches first answers, else the reaper at the
//!   deadline. It knows nothing of HTTP: a parked answer is a closure that sends a JSON body.
//! - [`stop::StopSignal`] is a session's stop: a flag that, once raised, wakes every wait
//!   registered on it (a command wait on a worker, a confirmation, an LLM call) at once.

pub mod park;
pub mod stop;

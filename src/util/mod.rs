//! Small helpers shared by the daemon, the console, the MCP server and the worker: time stamps
//! and randomness, the `Secret` string, the file-name rule, the JSON-schema check, and the
//! process-wide counters behind `/metrics`, systemd notifications. Nothing here knows about
//! sessions, HTTP or models.

pub mod clock;
pub mod filename;
pub mod metrics;
pub mod schema;
pub mod sd_notify;
pub mod secret;

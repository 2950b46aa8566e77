//! The HTTP layer: the two servers, their request guards, bodies, auth, routing and the
//! answers to parked long polls. The only place tiny_http is named. This file is the module
//! list and what the routes use: `reply.rs` (a route's `Reply`, JSON answers, `finish`),
//! `stream.rs` (bodies we write onto the connection), `drain.rs` (answers off the pool),
//! `incoming.rs` (what a guard reads of a request, the peer's address).
//!
//! Invariants: every request gets exactly one response, with a JSON body for errors; bodies are
//! read through `take(limit + 1)` so no client can make us buffer more than the limit; a
//! parked request is answered once, by whoever takes its `Responder` first (the event it
//! waits for, its deadline, or shutdown). Answers that may leave a body unread go out on a
//! short-lived thread, since tiny_http drains it with no socket timeout.

pub mod api;
mod body;
mod conns;
mod drain;
mod front;
mod guard;
mod heads;
mod incoming;
mod metrics;
mod openapi;
mod openapi_schemas;
mod relay;
mod reply;
mod server;
mod splice;
mod statuses;
mod stream;
mod tls;
mod triggers;
mod web;
pub mod worker_api;

pub use body::{
    check_bearer, header_value, parse_json, parse_worker_json, percent_decode, percent_encode, query_param, read_body,
    read_json, read_worker_json, split_url,
};
pub use conns::Limits as ConnLimits;
pub use front::sweep_stale_dirs;
pub use relay::{chunk_size, reread_head};
pub use server::{HttpServer, ServerSpec};
pub use statuses::session_failure;
pub use tls::{TlsConfig, load as load_tls};
pub use triggers::test_trigger;

pub use drain::send;
pub(crate) use drain::send_off_pool;
pub use incoming::{Incoming, peer_ip};
pub use reply::{
    Body, HttpResponse, Reply, error_response, finish, header, json_bytes_response, json_response, responder,
};
pub use stream::{Stream, WriteBody};

//! One integration test binary (faster links): the real daemon on port 0, over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agent;
mod api;
mod cli;
mod confirmations;
mod console;
mod desktop;
mod durability;
mod files;
mod lifecycle;
mod mcp;
mod metrics;
mod openapi;
mod providers;
mod service;
mod ssh;
mod steps;
mod tidy;
mod web;
mod worker_e2e;
mod workers;

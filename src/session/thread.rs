//! The whole life of one session, on its own thread: wait for the input files its request
//! named, lease a worker (or, for an `ssh://`
//! target, connect to the host), run the agent with a `SessionRunner` over that executor,
//! record how it ended, empty the vault, release the worker (or close the connection).

use super::runner::{AgentFn, AgentOutcome, SessionRunner};
use super::{Session, end_record, snapshot_record};
use crate::config::Config;
use crate::exec::Executor;
use crate::exec::ssh::SshExecutor;
use crate::hub::{LeaseEnd, WorkerExecutor, WorkerHub};
use crate::protocol::{LogKind, Status, is_ssh_target};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) fn run_session(session: &Arc<Session>, hub: &Arc<WorkerHub>, agent: &AgentFn, config: Arc<Config>) {
    let record = session.record();
    // Before any worker is held: the inputs it was promised come first.
    if let Some(end) = wait_for_inputs(session) {
        return finish(session, end);
    }
    if is_ssh_target(&record.target) {
        return run_over_ssh(session, agent, config);
    }
    let capability = record.session_type.capability();
    let profile = record.options.browser_profile.clone();
    let waiting_for = waiting_for(hub, capability, profile.as_deref());
    session.update(|r| r.waiting_for = Some(waiting_for.clone()));
    session.log(LogKind::System, &format!("waiting for {waiting_for}"), None);
    let stop = Arc::clone(session.stop_signal());
    let timeout = record.options.lease_timeout_s.map(Duration::from_secs);
    let budget = session.budget_deadline();
    let deadline = match (timeout.and_then(|t| Instant::now().checked_add(t)), budget) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let preferred = record.requested_worker.as_deref();
    let worker = match hub.lease_in_profile(&session.id, capability, preferred, profile.as_deref(), &stop, deadline) {
        Ok(worker) => worker,
        Err(LeaseEnd::Stopped) => return finish(session, AgentOutcome::Stopped),
        Err(LeaseEnd::TimedOut) if session.budget_reached(Duration::ZERO).is_some() => {
            let line = session.budget_line().unwrap_or_default();
            let summary = format!("{line} No worker that can run {capability} sessions became free in that time.");
            session.write_report(&format!(
                "# Task report — {}

{summary}
",
                session.id
            ));
            return finish(session, AgentOutcome::Finished { summary });
        }
        Err(LeaseEnd::TimedOut) => {
            let why = format!(
                "no worker that can run {capability} sessions became free within {} s (options.lease_timeout_s): {}",
                timeout.unwrap_or_default().as_secs(),
                hub.availability(capability)
            );
            return finish(session, AgentOutcome::Failed(why));
        }
    };
    session.update(|r| {
        if r.status == Status::Waiting {
            r.status = Status::Running;
        }
        r.waiting_for = None;
        r.worker = Some(worker.hostname.clone());
    });
    session.log(LogKind::System, &format!("worker {} ({}) assigned", worker.hostname, worker.id), None);
    let moved = Arc::clone(session);
    let executor =
        WorkerExecutor::new(Arc::clone(hub), worker, session.id.clone(), capability, record.requested_worker, stop)
            .allowing(record.options.allowed_domains.clone())
            .in_profile(profile)
            .on_move(Box::new(move |next| {
                moved.update(|r| r.worker = Some(next.hostname.clone()));
                moved.log(
                    LogKind::System,
                    &format!("worker lost; moved to worker {} ({})", next.hostname, next.id),
                    None,
                );
            }));
    let executor = Arc::new(executor);
    let runner = SessionRunner::new(Arc::clone(session), Arc::clone(&executor) as Arc<dyn Executor>, config);
    let outcome = if session.stop_requested() { AgentOutcome::Stopped } else { run_agent(session, agent, runner) };
    finish(session, outcome);
    executor.release();
}

/// How a session ends before its lease: the inputs it named never came, or a stop.
fn wait_for_inputs(session: &Arc<Session>) -> Option<AgentOutcome> {
    match session.wait_for_inputs() {
        Err(why) => Some(AgentOutcome::Failed(why.to_string())),
        Ok(()) if session.stop_requested() => Some(AgentOutcome::Stopped),
        Ok(()) => None,
    }
}

/// What a session waits for, in words: a worker (the one keeping its browser profile).
fn waiting_for(hub: &WorkerHub, capability: &str, profile: Option<&str>) -> String {
    let free = hub.availability(capability);
    match profile {
        Some(name) => format!(
            "a worker that can run {capability} sessions and keeps browser profile {name} (one session at a time \
             runs in it; {free})"
        ),
        None => format!("a worker that can run {capability} sessions ({free})"),
    }
}

/// A shell session on a host over SSH: no worker, the controller connects itself.
fn run_over_ssh(session: &Arc<Session>, agent: &AgentFn, config: Arc<Config>) {
    let target = session.record().target;
    session.log(LogKind::System, &format!("connecting to {target}"), None);
    let executor = match SshExecutor::connect(&target, &config, Arc::clone(session.stop_signal())) {
        Ok(executor) => executor,
        Err(_) if session.stop_requested() => return finish(session, AgentOutcome::Stopped),
        Err(why) => return finish(session, AgentOutcome::Failed(why.to_string())),
    };
    let describe = executor.describe();
    session.update(|r| {
        if r.status == Status::Waiting {
            r.status = Status::Running;
        }
        r.waiting_for = None;
        r.worker = Some(describe.clone());
    });
    let briefing = executor.briefing().unwrap_or_default();
    session.log(LogKind::System, &format!("connected: {describe}. {briefing}"), None);
    let runner = SessionRunner::new(Arc::clone(session), Arc::new(executor), config);
    let outcome = if session.stop_requested() { AgentOutcome::Stopped } else { run_agent(session, agent, runner) };
    finish(session, outcome);
}

/// The agent's run (a panic ends the process, `util::panic`: this session and every other is
/// then ended `interrupted` by the restart, and may be resumed).
fn run_agent(session: &Arc<Session>, agent: &AgentFn, runner: SessionRunner) -> AgentOutcome {
    // Closed again in `finish`.
    session.dir.keep_files_open();
    agent(runner)
}

/// Record how the session ended (a stop or shutdown already did), empty the vault, answer
/// log pollers.
fn finish(session: &Arc<Session>, outcome: AgentOutcome) {
    // Summaries and errors come from the model, the API or a worker: scrub them like the log.
    let outcome = {
        let vault = session.vault();
        match outcome {
            AgentOutcome::Finished { summary } => AgentOutcome::Finished { summary: vault.scrub(&summary) },
            AgentOutcome::Failed(reason) => AgentOutcome::Failed(vault.scrub(&reason)),
            AgentOutcome::Stopped => AgentOutcome::Stopped,
        }
    };
    let mut state = session.lock();
    let active = state.record.status.is_active();
    if active {
        match &outcome {
            AgentOutcome::Finished { summary } => {
                state.record.summary = Some(summary.clone());
                end_record(&mut state.record, Status::Finished, None);
            }
            AgentOutcome::Failed(reason) => end_record(&mut state.record, Status::Error, Some(reason.clone())),
            AgentOutcome::Stopped => end_record(&mut state.record, Status::Stopped, None),
        }
    }
    // Written even when a stop recorded the end: counters moved on since.
    let last = snapshot_record(&mut state);
    let status = state.record.status;
    drop(state);
    session.dir.sync_now();
    session.write_record(last);
    if active {
        let (kind, text) = match &outcome {
            AgentOutcome::Finished { summary } => (LogKind::System, format!("finished: {summary}")),
            AgentOutcome::Failed(reason) => (LogKind::Error, format!("ended with an error: {reason}")),
            AgentOutcome::Stopped => (LogKind::System, "stopped".to_string()),
        };
        session.log(kind, &text, None);
        // The end's own log line too, not only what came before it.
        session.dir.sync_now();
    }
    session.dir.close_files();
    session.vault().clear();
    session.end_log_waiters();
    session.settle_act();
    log::info!("{}: ended ({})", session.id, status.as_str());
    session.run_end_hook();
    // What its results took is free now: back to the kernel.
    crate::util::malloc::give_back();
}

//! A panic is a bug, and it ends the process. The release build is `panic = "abort"`: no
//! unwinding, no landing pads, no unwind tables, which keeps the static daemon under 5 MiB
//! (about 570 KB of it). A debug build unwinds (the test harness needs it), so the hook aborts
//! there too: both builds behave alike, and a test sees what a user would.
//!
//! What happens after: the service manager starts the daemon again (`Restart=on-failure` in
//! systemd/), and every session that was running is ended `interrupted` by the restart, which
//! `POST /sessions/:id/resume` continues from its journal. Request data never panics (the
//! property tests of tests/fuzz hold every parser of outside input to that).

/// Log a panic where the process's log goes (the daemon's file, the journal), run `cleanup`
/// (the worker's: its browser and shell process groups, its temporary folders), then abort.
pub fn abort_on_panic(cleanup: fn()) {
    let print = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        log::error!("a bug ends the process: {info}");
        log::logger().flush();
        print(info);
        cleanup();
        std::process::abort();
    }));
}

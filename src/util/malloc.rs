//! glibc's allocator settings for the daemon, which runs a thread per open connection
//! (tiny_http) and so thousands of threads with 2 000 long-polling workers.
//!
//! Each glibc thread keeps a cache of recently freed small blocks (tcache); thousands of
//! idle connection threads each holding their own cache kept about 35 MiB that no other
//! thread could use (2 000 workers: RSS 124–128 MiB with the cache, 72–96 MiB without, and
//! no slower per step). These can only be set through `GLIBC_TUNABLES` at
//! process start, so `serve` re-executes itself once with it set, before any thread exists.
//!
//! glibc also keeps what a large result freed (tens of MiB of small blocks) in its arenas:
//! `give_back` returns those free pages to the kernel, and runs when a session ends.

use std::ffi::OsString;

const TUNABLES: &str = "GLIBC_TUNABLES";
/// Set on the re-executed process: never a second exec, even if glibc dropped the setting
/// (it does for set-user-ID programs).
const REEXECUTED: &str = "AGENT_CONTROLLER_MALLOC_TUNED";
/// No per-thread cache, and two arenas rather than eight per core: with thousands of threads
/// each arena kept its own free space (the scale bench: 89–93 MiB with the default arenas,
/// 82–87 MiB with two, the step time unchanged).
const FEW_CACHES: &str = "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2";

/// Re-execute this process with the thread cache off, unless the environment already says
/// how many blocks it holds (ours, or the operator's own choice). Returns only if it did not
/// re-execute (already set, or the exec failed: the daemon then runs with glibc's default).
pub fn drop_thread_caches() {
    let current = std::env::var_os(TUNABLES).unwrap_or_default();
    if std::env::var_os(REEXECUTED).is_some() || current.to_string_lossy().contains("glibc.malloc.tcache_count") {
        return;
    }
    let mut tunables = current.clone();
    if !tunables.is_empty() {
        tunables.push(":");
    }
    tunables.push(FEW_CACHES);
    reexec_with(tunables);
}

fn reexec_with(tunables: OsString) {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let Some(argv0) = args.next() else { return };
    // The binary's own path, not argv[0] (which may be relative or a bare name looked up in
    // PATH); not /proc/self/exe either, which would rename the process "exe" for ps and pgrep.
    let Ok(binary) = std::env::current_exe() else { return };
    let error =
        std::process::Command::new(binary).arg0(argv0).args(args).env(TUNABLES, tunables).env(REEXECUTED, "1").exec();
    log::debug!("could not re-execute with glibc's thread cache off: {error}");
}

/// Return the free pages of glibc's arenas to the kernel (`malloc_trim`): after a session
/// whose results took tens of MiB, RSS goes back down instead of staying at its peak.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only walks glibc's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

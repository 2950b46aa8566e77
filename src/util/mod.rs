//! Small helpers shared by the daemon, the console, the MCP server and the worker: time stamps
//! and randomness, terminal-free output, the `Secret` string, the file-name rule, the JSON-schema
//! check, the process-wide counters behind `/metrics`, systemd notifications, private temporary
//! folders, the clients' TLS settings, animated GIFs from one-frame GIFs, percent-encoding of URL components, the allocator's settings, an error's causes for the log, a text cut to a bound. Nothing here knows about sessions, routes or models.

pub mod ansi;
pub mod cause;
pub mod clock;
pub mod filename;
pub mod gif;
pub mod malloc;
pub mod metrics;
pub mod panic;
pub mod schema;
pub mod sd_notify;
pub mod secret;
pub mod tls;
pub mod totp;

/// RFC 3986's unreserved characters; everything else is percent-encoded.
pub const URL_UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `s` as one URL component (a path segment, a query value, RFC 5987's `filename*`).
pub fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, URL_UNRESERVED).to_string()
}

/// A new folder only we can use, with an unguessable name (exclusive create, mode 0700).
pub fn private_temp_dir(prefix: &str) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    for _ in 0..16 {
        let dir = std::env::temp_dir().join(format!("{prefix}{:016x}", clock::random_u64()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary folder name"))
}

/// `text` at most `max` characters: a longer one is cut on a character boundary and says how
/// long it was (the note comes on top of the `max`).
pub fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => {
            let total = text.chars().count();
            format!("{}… [message cut: {total} characters in all]", &text[..cut])
        }
    }
}

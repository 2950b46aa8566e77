//! The volatile parts of a transcript replaced by fixed words, so a golden is the same on every
//! run and machine: the session's nonce (14 lower-case letters, recognised only inside a
//! boundary marker, then replaced wherever it occurs), loopback addresses with their port,
//! session ids, RFC 3339 time stamps, `duration_ms` values, and the test's temporary folders
//! and checkout.
//!
//! Guarantees: nothing else changes. A 14-letter word outside a marker, another host's URL, a
//! number that is not a duration and a date without a time stay as they are (the unit test
//! below holds each near miss), so a real difference still shows in the golden.

/// `text` with the volatile parts replaced.
pub fn normalize(text: &str) -> String {
    let mut out = text.to_string();
    for nonce in nonces(text) {
        out = out.replace(&nonce, "NONCE");
    }
    let temp = std::env::temp_dir().display().to_string();
    out = replace_each(&out, &format!("{}/ac-test-", temp.trim_end_matches('/')), temp_folder);
    out = out.replace(env!("CARGO_MANIFEST_DIR"), "REPO");
    out = replace_each(&out, "http://127.0.0.1:", |rest| port(rest, "http://SITE"));
    out = replace_each(&out, "127.0.0.1:", |rest| port(rest, "SITE"));
    out = replace_each(&out, "sess_", session_id);
    out = replace_each(&out, "\"duration_ms\":", |rest| number_after(rest, "\"duration_ms\":", "MS"));
    timestamps(&out)
}

/// The nonces of the boundary markers in `text`: `<<page x>>`, `<</output x>>`, … with `x`
/// exactly 14 lower-case letters.
fn nonces(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for kind in ["page", "desktop", "output"] {
        for open in [format!("<<{kind} "), format!("<</{kind} ")] {
            for (at, _) in text.match_indices(&open) {
                let rest = &text[at + open.len()..];
                let word: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
                if word.len() == 14 && rest[14..].starts_with(">>") && !found.contains(&word) {
                    found.push(word);
                }
            }
        }
    }
    found
}

/// Every `prefix` in `text` whose following text `f` recognises, replaced by what `f` gives
/// (`f` gets the text after the prefix, returns the replacement and how many bytes it took).
fn replace_each(text: &str, prefix: &str, f: impl Fn(&str) -> Option<(String, usize)>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        match f(after) {
            Some((replacement, taken)) => {
                out.push_str(&replacement);
                rest = &after[taken..];
            }
            None => {
                out.push_str(prefix);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// `PORT` after a loopback address.
fn port(rest: &str, word: &str) -> Option<(String, usize)> {
    let n = digits(rest);
    (n > 0).then(|| (word.to_string(), n))
}

/// A test folder `TAG-PID-N` (tests/support's `TempDir`) as `TMP/ac-test-TAG`.
fn temp_folder(rest: &str) -> Option<(String, usize)> {
    let name_len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_').count();
    let name = &rest[..name_len];
    let mut parts = name.rsplitn(3, '-');
    let (n, pid, tag) = (parts.next()?, parts.next()?, parts.next()?);
    let numeric = |s: &str| !s.is_empty() && digits(s) == s.len();
    (numeric(n) && numeric(pid)).then(|| (format!("TMP/ac-test-{tag}"), name_len))
}

/// `sess_20260321T101112Z` (and `_2` …) as `sess_ID`.
fn session_id(rest: &str) -> Option<(String, usize)> {
    if digits(rest) != 8 || !rest[8..].starts_with('T') {
        return None;
    }
    let stamp = 9 + digits(&rest[9..]);
    let zone = usize::from(rest[stamp..].starts_with('Z'));
    let suffix = if rest[stamp + zone..].starts_with('_') { 1 + digits(&rest[stamp + zone + 1..]) } else { 0 };
    Some(("sess_ID".to_string(), stamp + zone + suffix))
}

/// The number after `key` (a space allowed) as `word`.
fn number_after(rest: &str, key: &str, word: &str) -> Option<(String, usize)> {
    let space = usize::from(rest.starts_with(' '));
    let n = digits(&rest[space..]);
    (n > 0).then(|| (format!("{key}{}{word}", &rest[..space]), space + n))
}

/// `2026-03-21T10:11:12Z` (fraction and offset optional) as `TIMESTAMP`.
fn timestamps(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match timestamp_len(&bytes[i..]) {
            Some(n) => {
                out.push_str("TIMESTAMP");
                i += n;
            }
            None => {
                let c = text[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

fn timestamp_len(b: &[u8]) -> Option<usize> {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if b.len() < shape.len() {
        return None;
    }
    let fits = shape.iter().zip(b).all(|(s, c)| if *s == b'd' { c.is_ascii_digit() } else { s == c });
    if !fits {
        return None;
    }
    let mut n = shape.len();
    if b.get(n) == Some(&b'.') {
        n += 1 + b[n + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    }
    match b.get(n) {
        Some(b'Z') => n += 1,
        Some(b'+' | b'-') if b.len() >= n + 6 && b[n + 3] == b':' => n += 6,
        _ => {}
    }
    Some(n)
}

#[test]
fn the_normalizer_replaces_only_the_volatile_parts() {
    let temp = std::env::temp_dir().display().to_string();
    let temp = temp.trim_end_matches('/');
    let text = format!(
        "Text between the <<page abcdefghijklmn>> marker lines\n<<page abcdefghijklmn>>\nx\n<</page abcdefghijklmn>>\n\
         at http://127.0.0.1:40123/form and 127.0.0.1:22, sess_20260321T101112Z_2 at 2026-03-21T10:11:12.345Z,\n\
         {{\"duration_ms\": 17, \"exit_code\": 17}} in {temp}/ac-test-shell-1234-5/work/a.csv"
    );
    let want = "Text between the <<page NONCE>> marker lines\n<<page NONCE>>\nx\n<</page NONCE>>\n\
         at http://SITE/form and SITE, sess_ID at TIMESTAMP,\n\
         {\"duration_ms\": MS, \"exit_code\": 17} in TMP/ac-test-shell/work/a.csv";
    assert_eq!(normalize(&text), want);
    // Near misses stay: a 14-letter word outside a marker, a 13-letter nonce, another host, a
    // bare number, a date without a time, a folder that is not a test's.
    let kept = format!(
        "abcdefghijklmn <<page abcdefghijklm>> http://shop.test:8080/ 127.0.0.2:80 sess_x 2026-03-21 \
         \"exit_code\": 3 {temp}/other-1-2"
    );
    assert_eq!(normalize(&kept), kept);
}

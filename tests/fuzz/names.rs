//! File names from anywhere (`util::filename`), request URLs: path segments, query pairs,
//! percent escapes (`http::split_url`), and the allow-list's hosts and patterns (`protocol::domains`).

use super::*;
use agent_controller::http::{percent_decode, percent_encode, query_param, split_url};
use agent_controller::util::filename::{MAX_NAME_BYTES, sanitize_filename};

const NAMES: &[&str] = &[
    "report.pdf",
    "../../etc/passwd",
    "C:\\Users\\a\\file.txt",
    ".hidden",
    "CON.txt",
    "com1",
    "zip",
    "invoice\u{202E}fdp.exe",
    "a\u{2215}b",
    "  spaced . name .  ",
    "résumé été.docx",
];

/// What a sanitized name may not hold.
fn forbidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*')
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
        || matches!(c, '\u{2044}' | '\u{2215}' | '\u{29F8}' | '\u{29F9}' | '\u{FF0F}' | '\u{FF3C}')
}

fn long_names() -> impl Strategy<Value = String> {
    // Long stems with short, long or no extensions, in one- to four-byte characters.
    let ch = prop_oneof![Just('a'), Just('é'), Just('語'), Just('😀'), Just(' '), Just('.'), any::<char>()];
    (prop::collection::vec(ch, 100..220), prop_oneof![Just(String::new()), "\\.[a-z]{1,20}"])
        .prop_map(|(stem, ext)| stem.into_iter().collect::<String>() + &ext)
}

#[test]
fn fuzz_filenames() {
    let input = prop_oneof![3 => text_input(NAMES), 1 => long_names()];
    fuzz("filenames (util::filename::sanitize_filename)", input, |raw| {
        let name = sanitize_filename(&raw);
        prop_assert!(!name.is_empty());
        prop_assert!(name.len() <= MAX_NAME_BYTES, "{} bytes: {name:?}", name.len());
        prop_assert!(!name.chars().any(forbidden), "{name:?}");
        prop_assert!(!name.starts_with('.') && name != "..", "{name:?}");
        prop_assert!(!name.ends_with(['.', ' ']), "{name:?}");
        prop_assert!(name.trim() == name, "{name:?}");
        prop_assert_ne!(name.as_str(), "zip");
        let stem = name.split('.').next().unwrap_or("").to_ascii_uppercase();
        prop_assert!(!matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL"), "{name:?}");
        // Sanitizing twice (worker, then daemon) changes nothing more.
        prop_assert_eq!(sanitize_filename(&name), name.clone());
        Ok(())
    });
}

const URLS: &[&str] = &[
    "/sessions/sess_1/files/a%20b.pdf?after=3&wait=1",
    "/sessions?status=running&limit=10",
    "/command?worker_id=w_1%2B2&x=a+b",
    "//a//b/?&=&k",
    "/%F0%9F%98%80/%E9?q=%zz",
];

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![text(), "[a-z0-9_.-]{1,10}"].prop_filter("a segment is not empty", |s| !s.is_empty())
}

#[test]
fn fuzz_urls() {
    fuzz("URLs (http::split_url, percent_decode)", text_input(URLS), |url| {
        let (segments, pairs) = split_url(&url);
        prop_assert!(segments.iter().all(|s| !s.is_empty()));
        for (k, _) in &pairs {
            prop_assert!(query_param(&pairs, k).is_some());
        }
        Ok(())
    });
}

#[test]
fn fuzz_url_round_trip() {
    let parts = (
        prop::collection::vec(segment(), 0..6),
        prop::collection::vec((segment(), prop_oneof![text(), Just(String::new())]), 0..5),
    );
    fuzz("URLs built from encoded parts (http::split_url round trip)", parts, |(segs, pairs)| {
        let path: Vec<String> = segs.iter().map(|s| percent_encode(s)).collect();
        let query: Vec<String> =
            pairs.iter().map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v))).collect();
        let url = format!("/{}?{}", path.join("/"), query.join("&"));
        let (got_segs, got_pairs) = split_url(&url);
        prop_assert_eq!(got_segs, segs);
        prop_assert_eq!(got_pairs, pairs.clone());
        for s in pairs.iter().flat_map(|(k, v)| [k, v]) {
            prop_assert_eq!(&percent_decode(&percent_encode(s)), s);
        }
        Ok(())
    });
}

const SSH: &[&str] = &["ssh://deploy@host.test", "ssh://root@10.0.0.1:2222/", "ssh://a@[::1]:22", "ssh://u@h:0"];

#[test]
fn fuzz_ssh_targets() {
    use agent_controller::exec::ssh::SshTarget;
    fuzz("ssh:// targets (exec::ssh::SshTarget: FromStr)", text_input(SSH), |target| {
        let Ok(t) = target.parse::<SshTarget>() else { return Ok(()) };
        // Nothing ssh could take for an option or a second argument.
        for part in [&t.user, &t.host] {
            prop_assert!(!part.is_empty() && !part.starts_with('-'), "{t:?}");
            prop_assert!(part.chars().all(|c| c.is_ascii_alphanumeric() || "._-:".contains(c)), "{t:?}");
        }
        prop_assert!(t.port != 0);
        let host = if t.host.contains(':') { format!("[{}]", t.host) } else { t.host.clone() };
        prop_assert_eq!(format!("ssh://{}@{host}:{}", t.user, t.port).parse::<SshTarget>(), Ok(t.clone()));
        Ok(())
    });
}

const HOSTILE_URLS: &[&str] = &[
    "https://evil.test\\@allowed.test/",
    "https://user:pw@Shop.Example.com:8443/a?b#c",
    "http://0x7f.1/",
    "http://[::ffff:127.0.0.1]:80/",
    "https://B\u{fc}cher.example./",
    "https://%61llowed.test/",
    "blob:view-source:https://a.test/x",
    "*.example.com",
];

#[test]
fn fuzz_allow_list_hosts() {
    use agent_controller::protocol::domains::{DomainPattern, Origin, host_of, origin_of};
    fuzz("allow-list hosts (protocol::domains)", text_input(HOSTILE_URLS), |text| {
        // A host the list reads from a URL is one it can name, and then allows.
        if let Some(host) = host_of(&text) {
            if let Ok(pattern) = DomainPattern::parse(&host) {
                prop_assert!(pattern.allows(&host), "{text:?} → {host:?}");
            }
        }
        // A pattern reads back as itself.
        if let Ok(pattern) = DomainPattern::parse(&text) {
            prop_assert_eq!(DomainPattern::parse(&pattern.to_string()).ok(), Some(pattern.clone()));
        }
        // An origin reads back as itself, and holds the URL it came from.
        if let Some(origin) = origin_of(&text) {
            prop_assert_eq!(Origin::parse(&origin.to_string()), Ok(origin.clone()));
            prop_assert!(origin.holds(&text));
        }
        Ok(())
    });
}

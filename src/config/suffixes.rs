//! Wildcards over a public suffix (`*.co.uk`, `*.github.io`) are refused: such a pattern lets in
//! every site anyone registers under the suffix, which is no allow-list at all.
//!
//! The suffixes are the Public Suffix List (its ICANN and private sections) as the host's
//! `publicsuffix` package keeps it current (`browser.public_suffix_list`), read by the
//! `publicsuffix` crate when a wildcard is checked and dropped after (about 5 ms and 1.5 MB
//! while parsed), so the idle daemon holds none of it. Without a readable list a wildcard is
//! refused with the reason: the check fails closed. Patterns without a wildcard need no list.

use crate::protocol::domains::DomainPattern;
use publicsuffix::Psl;
use std::path::Path;

/// Where Debian's and Ubuntu's `publicsuffix` package installs the list.
pub const DEFAULT_LIST: &str = "/usr/share/publicsuffix/public_suffix_list.dat";

/// Why a wildcard among `patterns` may not stand, if one may not.
pub fn check_wildcards<'a>(patterns: impl IntoIterator<Item = &'a DomainPattern>, list: &Path) -> Result<(), String> {
    let wildcards: Vec<&DomainPattern> = patterns.into_iter().filter(|p| p.wildcard_domain().is_some()).collect();
    let Some(first) = wildcards.first() else { return Ok(()) };
    let suffixes = read(list).map_err(|why| {
        format!(
            "{first} cannot be checked against the public-suffix list: {why} (install the \
             `publicsuffix` package, or set `browser.public_suffix_list`)"
        )
    })?;
    for pattern in wildcards {
        let Some(domain) = pattern.wildcard_domain() else { continue };
        if is_public_suffix(&suffixes, domain) {
            return Err(format!(
                "{pattern} is a wildcard over the public suffix `{domain}`: it allows every site \
                 registered under it; name the site (`*.example.{domain}`)"
            ));
        }
    }
    Ok(())
}

fn read(list: &Path) -> Result<publicsuffix::List, String> {
    let text = std::fs::read_to_string(list).map_err(|e| format!("cannot read {}: {e}", list.display()))?;
    text.parse::<publicsuffix::List>().map_err(|e| format!("{} is not a public-suffix list: {e}", list.display()))
}

/// `domain` (lower-case punycode, as a pattern keeps it) is itself a suffix a rule of the list
/// names (the implicit `*` rule for an unknown top-level domain does not count).
fn is_public_suffix(list: &publicsuffix::List, domain: &str) -> bool {
    list.suffix(domain.as_bytes()).is_some_and(|s| s.is_known() && s.as_bytes() == domain.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> DomainPattern {
        DomainPattern::parse(text).unwrap()
    }

    /// Rules of each kind, in the list's own format: plain, wildcard with an exception, private.
    fn list_file(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("psl.dat");
        let text = "// ===BEGIN ICANN DOMAINS===\nuk\nco.uk\n*.kawasaki.jp\n!city.kawasaki.jp\njp\n\
                    // ===END ICANN DOMAINS===\n// ===BEGIN PRIVATE DOMAINS===\ngithub.io\n// ===END PRIVATE DOMAINS===\n";
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_wildcard_over_a_suffix_of_any_kind_is_refused_and_one_over_a_site_is_not() {
        let dir = std::env::temp_dir().join(format!("ac-psl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = list_file(&dir);
        for refused in ["*.co.uk", "*.github.io", "*.foo.kawasaki.jp"] {
            let e = check_wildcards([&pattern(refused)], &list).unwrap_err();
            assert!(e.contains("public suffix"), "{refused}: {e}");
        }
        for allowed in ["*.example.co.uk", "*.me.github.io", "*.city.kawasaki.jp", "*.example.internal", "co.uk"] {
            assert_eq!(check_wildcards([&pattern(allowed)], &list), Ok(()), "{allowed}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_list_a_wildcard_is_refused_and_a_host_is_not() {
        let missing = Path::new("/nonexistent/public_suffix_list.dat");
        let e = check_wildcards([&pattern("*.example.com")], missing).unwrap_err();
        assert!(e.contains("cannot read") && e.contains("publicsuffix"), "{e}");
        assert_eq!(check_wildcards([&pattern("example.com")], missing), Ok(()));
    }

    /// The list the machine has (scripts/install-test-deps.sh installs it).
    #[test]
    fn the_hosts_list_knows_the_common_suffixes() {
        let list = Path::new(DEFAULT_LIST);
        assert!(list.exists(), "no {DEFAULT_LIST}: run scripts/install-test-deps.sh");
        assert!(check_wildcards([&pattern("*.co.uk")], list).is_err());
        assert!(check_wildcards([&pattern("*.github.io")], list).is_err());
        assert!(check_wildcards([&pattern("*.公司.cn")], list).is_err(), "a Unicode rule, as punycode");
        assert_eq!(check_wildcards([&pattern("*.example.com")], list), Ok(()));
    }
}

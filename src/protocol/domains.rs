//! Domain allow-lists (`options.allowed_domains`, `browser.allowed_domains`) and the host a
//! credential is bound to, shared by the controller (which checks them) and the worker (which
//! enforces them at the browser).
//!
//! A pattern is a host name (`example.com`: that host only), a wildcard over a domain's
//! subdomains (`*.example.com`: any host under it, and the domain itself), or an IP address
//! (`127.0.0.1`, `::1`). Guarantees: `parse` refuses a wildcard anywhere but the first label,
//! a wildcard over a top-level domain (`*.com`) or everything (`*`), schemes, ports, paths and
//! empty labels; hosts compare without case and without a trailing dot; an empty list allows
//! everything (no list, nothing changes).

use serde::{Deserialize, Serialize};

/// One allowed host pattern, as parsed (lower case, no trailing dot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DomainPattern {
    /// The host, or for a wildcard the domain after `*.`.
    host: String,
    wildcard: bool,
}

impl DomainPattern {
    pub fn parse(text: &str) -> Result<DomainPattern, String> {
        let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
        let t = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).map(str::to_string).unwrap_or(t);
        if t.parse::<std::net::IpAddr>().is_ok() {
            return Ok(DomainPattern { host: t, wildcard: false });
        }
        let (wildcard, host) = match t.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, t.clone()),
        };
        let why = if host.is_empty() || t == "*" {
            Some("it allows every host")
        } else if t.contains("://") || host.contains([':', '/', '?', '#', '@']) {
            Some("a pattern is a host name only (no scheme, port or path)")
        } else if host.contains('*') {
            Some("`*` may only stand first, as `*.example.com`")
        } else if host.split('.').any(|label| label.is_empty() || !label.chars().all(host_char)) {
            Some("it is not a host name")
        } else if wildcard && !host.contains('.') {
            Some("a wildcard over a top-level domain allows too much")
        } else {
            None
        };
        match why {
            Some(why) => Err(format!("`{text}` is not an allowed-domain pattern: {why}")),
            None => Ok(DomainPattern { host, wildcard }),
        }
    }

    /// Whether `host` (a URL's host, with or without brackets) is allowed by this pattern.
    pub fn allows(&self, host: &str) -> bool {
        let host = normal_host(host);
        match self.wildcard {
            false => host == self.host,
            true => host == self.host || host.strip_suffix(&self.host).is_some_and(|rest| rest.ends_with('.')),
        }
    }

    /// Whether every host this pattern allows is allowed by `other`.
    pub fn within(&self, other: &DomainPattern) -> bool {
        other.allows(&self.host) && (!self.wildcard || other.wildcard)
    }

    /// Chromium's proxy-bypass rules for this pattern (`;`-separated).
    pub fn bypass_rules(&self) -> String {
        match (self.wildcard, self.host.contains(':')) {
            (true, _) => format!("{h};*.{h}", h = self.host),
            (false, true) => format!("[{}]", self.host),
            (false, false) => self.host.clone(),
        }
    }
}

fn host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn normal_host(host: &str) -> String {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h.strip_prefix('[').and_then(|h| h.strip_suffix(']')).map(str::to_string).unwrap_or(h)
}

impl TryFrom<String> for DomainPattern {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        DomainPattern::parse(&s)
    }
}

impl From<DomainPattern> for String {
    fn from(p: DomainPattern) -> String {
        if p.wildcard { format!("*.{}", p.host) } else { p.host }
    }
}

impl std::fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from(self.clone()))
    }
}

/// Whether `host` passes `list` (an empty list passes everything).
pub fn allowed(list: &[DomainPattern], host: &str) -> bool {
    list.is_empty() || list.iter().any(|p| p.allows(host))
}

/// The host of an absolute URL (`http://user@Host:8080/x` → `host`), lower case, IPv6 without
/// brackets; `None` when it has none.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?.0,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| normal_host(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> DomainPattern {
        DomainPattern::parse(s).unwrap()
    }

    #[test]
    fn patterns_allow_their_host_and_a_wildcard_its_subdomains() {
        assert!(p("example.com").allows("Example.COM."));
        assert!(!p("example.com").allows("www.example.com"));
        assert!(!p("example.com").allows("badexample.com"));
        let w = p("*.example.com");
        assert!(w.allows("example.com") && w.allows("a.b.example.com"));
        assert!(!w.allows("evilexample.com") && !w.allows("example.com.evil.test"));
        assert!(p("127.0.0.1").allows("127.0.0.1") && !p("127.0.0.1").allows("127.0.0.2"));
        assert!(p("[::1]").allows("[::1]") && p("::1").allows("::1"));
        assert!(allowed(&[], "anything.test"));
    }

    #[test]
    fn wildcards_over_everything_or_a_top_level_domain_and_urls_are_refused() {
        for bad in ["*", "*.com", "*.", "ex*ample.com", "a.*.com", "http://example.com", "example.com:8080", "", "a..b"]
        {
            assert!(DomainPattern::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(String::from(p("*.Example.com.")), "*.example.com");
    }

    #[test]
    fn a_pattern_is_within_another_only_when_it_allows_no_more() {
        assert!(p("a.example.com").within(&p("*.example.com")));
        assert!(p("*.a.example.com").within(&p("*.example.com")));
        assert!(!p("*.example.com").within(&p("example.com")));
        assert!(!p("other.test").within(&p("*.example.com")));
    }

    #[test]
    fn the_host_of_a_url() {
        assert_eq!(host_of("https://user:pw@Shop.Example.com:8443/a?b#c").as_deref(), Some("shop.example.com"));
        assert_eq!(host_of("http://[::1]:80/").as_deref(), Some("::1"));
        assert_eq!(host_of("http://127.0.0.2:9/x").as_deref(), Some("127.0.0.2"));
        assert_eq!(host_of("about:blank"), None);
        assert_eq!(p("*.example.com").bypass_rules(), "example.com;*.example.com");
    }
}

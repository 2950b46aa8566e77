//! Domain allow-lists (`options.allowed_domains`, `browser.allowed_domains`), the host a
//! credential is bound to and a URL's origin, shared by the controller (which checks them) and
//! the worker (which enforces them at the browser).
//!
//! A pattern is a host name (`example.com`: that host only), a wildcard over a domain's
//! subdomains (`*.example.com`: any host under it, and the domain itself), or an IP address
//! (`127.0.0.1`, `::1`). Guarantees: URLs and hosts are read by the WHATWG URL rules, as the
//! browser reads them (the `url` crate): `\` ends a host like `/`, userinfo is not the host,
//! percent-escapes are decoded, names go through IDNA to lower-case punycode, an IPv4 address in
//! any notation (`0x7f.1`, `2130706433`) is its dotted form, so no URL passes the list for a
//! host other than the one the browser then reaches. `parse` refuses a wildcard anywhere but the
//! first label, over an IP address, a top-level domain (`*.com`) or everything (`*`), schemes,
//! ports, paths and empty labels; hosts compare without a full name's trailing dot; an empty
//! list allows everything. An origin is a URL's scheme, host and port, as the browser keeps
//! sites apart (`http://bank.test`, `https://bank.test`, `https://bank.test:8443` are three).

use serde::{Deserialize, Serialize};
use std::net::Ipv6Addr;

/// Schemes whose URL holds another URL, whose host the browser loads (`blob:https://h/…`).
const WRAPPING_SCHEMES: [&str; 2] = ["blob", "view-source"];

/// One allowed host pattern, as parsed (a host as `host_of` gives it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DomainPattern {
    /// The host, or for a wildcard the domain after `*.`.
    host: String,
    wildcard: bool,
}

/// A pattern or an origin that was refused: what was written and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDomain {
    #[error("`{text}` is not an allowed-domain pattern: {why}")]
    Pattern { text: String, why: &'static str },
    #[error("`{text}` is not an origin: {why}")]
    Origin { text: String, why: String },
}

impl DomainPattern {
    pub fn parse(text: &str) -> Result<DomainPattern, BadDomain> {
        let t = text.trim();
        let (wildcard, rest) = match t.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let host = canonical_host(rest);
        let is_ip = host.as_deref().is_some_and(|h| h.parse::<std::net::IpAddr>().is_ok());
        let why = if rest.trim_end_matches('.').is_empty() || t == "*" {
            Some("it allows every host")
        } else if rest.contains('*') {
            Some("`*` may only stand first, as `*.example.com`")
        } else if host.is_none() && rest.contains([':', '/', '\\', '?', '#', '@']) {
            Some("a pattern is a host name only (no scheme, port or path)")
        } else if wildcard && is_ip {
            Some("a wildcard covers a domain's subdomains, not an IP address")
        } else if !is_ip && !host.as_deref().is_some_and(plain_name) {
            Some("it is not a host name")
        } else if wildcard && !host.as_deref().is_some_and(|h| h.contains('.')) {
            Some("a wildcard over a top-level domain allows too much")
        } else {
            None
        };
        match (why, host) {
            (None, Some(host)) => Ok(DomainPattern { host, wildcard }),
            (why, _) => Err(BadDomain::Pattern { text: text.to_string(), why: why.unwrap_or("it is not a host") }),
        }
    }

    /// Whether `host` (a URL's host, with or without brackets) is allowed by this pattern.
    pub fn allows(&self, host: &str) -> bool {
        let Some(host) = canonical_host(host) else { return false };
        match self.wildcard {
            false => host == self.host,
            true => host == self.host || host.strip_suffix(&self.host).is_some_and(|rest| rest.ends_with('.')),
        }
    }

    /// The domain a wildcard covers (`example.com` of `*.example.com`); none for a host.
    pub fn wildcard_domain(&self) -> Option<&str> {
        self.wildcard.then_some(self.host.as_str())
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

/// Dot-separated labels of letters, digits, `-` and `_` (what IDNA leaves of a name).
fn plain_name(host: &str) -> bool {
    host.split('.')
        .all(|label| !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)))
}

/// A host as the browser has it after parsing (see `host_text`); a bare IPv6 address too.
fn canonical_host(text: &str) -> Option<String> {
    let host = match text.parse::<Ipv6Addr>() {
        Ok(v6) => url::Host::Ipv6(v6),
        Err(_) => url::Host::parse(text).ok()?,
    };
    Some(host_text(&host))
}

/// A parsed host as text: a name lower case without the one trailing dot of a fully qualified
/// name (`a.test.` is `a.test`; `.` stays), an IP address in its canonical form (IPv6 without
/// brackets).
fn host_text<S: AsRef<str>>(host: &url::Host<S>) -> String {
    match host {
        url::Host::Domain(name) => {
            let name = name.as_ref();
            name.strip_suffix('.').filter(|n| !n.is_empty()).unwrap_or(name).to_ascii_lowercase()
        }
        url::Host::Ipv4(v4) => v4.to_string(),
        url::Host::Ipv6(v6) => v6.to_string(),
    }
}

impl TryFrom<String> for DomainPattern {
    type Error = BadDomain;
    fn try_from(s: String) -> Result<Self, BadDomain> {
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

/// The host the browser reaches for an absolute URL (`http://user@Host:8080/x` → `host`), read
/// by the WHATWG rules (see the header), IPv6 without brackets; a `blob:` or `view-source:`
/// URL's is the host of the URL inside it. `None` when it has none or is no URL.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    match parsed.host() {
        Some(host) => Some(host_text(&host)),
        None if WRAPPING_SCHEMES.contains(&parsed.scheme()) => host_of(parsed.path()),
        None => None,
    }
}

/// A URL's origin: scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

impl Origin {
    /// An origin as written (`https://bank.test`, `http://[::1]:8080`): a URL with nothing after
    /// its port but an optional `/`.
    pub fn parse(text: &str) -> Result<Origin, BadDomain> {
        let bad = |why: &str| BadDomain::Origin { text: text.to_string(), why: why.to_string() };
        let parsed = url::Url::parse(text.trim()).map_err(|e| bad(&e.to_string()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("it names a user"));
        }
        if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(bad("an origin has no path, query or fragment"));
        }
        origin_of(parsed.as_str()).ok_or_else(|| bad("only http, https, ws, wss and ftp URLs have one"))
    }

    /// Whether `url` is on this origin.
    pub fn holds(&self, url: &str) -> bool {
        origin_of(url).as_ref() == Some(self)
    }
}

/// The origin of an absolute URL (a `blob:` URL's is its inner URL's); `None` for a URL whose
/// origin is opaque (`about:`, `data:`, `file:`, any other scheme) and for text that is no URL.
pub fn origin_of(url: &str) -> Option<Origin> {
    match url::Url::parse(url).ok()?.origin() {
        // The host as the browser's origin has it: `bank.test.` is another origin than `bank.test`.
        url::Origin::Tuple(scheme, host, port) => Some(Origin { scheme, host: origin_host(&host), port }),
        url::Origin::Opaque(_) => None,
    }
}

/// An origin's host as text: a name as parsed (lower case, any trailing dot kept), an IP address
/// as `host_text` writes it.
fn origin_host(host: &url::Host<String>) -> String {
    match host {
        url::Host::Domain(name) => name.clone(),
        ip => host_text(ip),
    }
}

impl std::fmt::Display for Origin {
    /// `scheme://host[:port]`: the port only when it is not the scheme's default.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        write!(f, "{}://{host}", self.scheme)?;
        match url::Url::parse(&format!("{}://{host}/", self.scheme)).ok().and_then(|u| u.port_or_known_default()) {
            Some(default) if default == self.port => Ok(()),
            _ => write!(f, ":{}", self.port),
        }
    }
}

impl TryFrom<String> for Origin {
    type Error = BadDomain;
    fn try_from(s: String) -> Result<Self, BadDomain> {
        Origin::parse(&s)
    }
}

impl From<Origin> for String {
    fn from(o: Origin) -> String {
        o.to_string()
    }
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

    #[test]
    fn the_host_of_a_url_is_the_one_the_browser_reaches() {
        let cases = [
            // A backslash ends the authority like `/`: the `@` after it is in the path.
            ("https://evil.test\\@allowed.test/", "evil.test"),
            ("http://evil.test\\.allowed.test/", "evil.test"),
            ("https:\\\\evil.test\\x", "evil.test"),
            ("https:evil.test/", "evil.test"),
            ("https://allowed.test:443@evil.test/", "evil.test"),
            ("https://evil.test#@allowed.test/", "evil.test"),
            ("https://ev\til.test/", "evil.test"),
            ("https://%61llowed.test/", "allowed.test"),
            ("https://ALLOWED.Test./", "allowed.test"),
            ("https://B\u{fc}cher.example/", "xn--bcher-kva.example"),
            ("https://\u{ff41}llowed.test/", "allowed.test"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1:8080/", "127.0.0.1"),
            ("http://[0:0::1]/", "::1"),
            ("blob:https://evil.test/1234", "evil.test"),
            ("view-source:https://evil.test/", "evil.test"),
        ];
        for (url, host) in cases {
            assert_eq!(host_of(url).as_deref(), Some(host), "{url}");
        }
        for none in ["https://exa mple.test/", "http://[::1/", "about:blank", "data:text/html,hi", "not a url"] {
            assert_eq!(host_of(none), None, "{none}");
        }
    }

    #[test]
    fn patterns_read_hosts_as_the_browser_does() {
        assert_eq!(p("B\u{fc}cher.Example").to_string(), "xn--bcher-kva.example");
        assert!(p("b\u{fc}cher.example").allows("xn--bcher-kva.example"));
        assert!(p("127.0.0.1").allows("0x7f.1") && p("127.0.0.1").allows("2130706433"));
        assert_eq!(p("0x7f.1").to_string(), "127.0.0.1");
        assert_eq!(p("%61llowed.test").to_string(), "allowed.test");
        for bad in ["evil.test\\@allowed.test", "allowed.test\\", "*.127.0.0.1", "a.test/x", "exa mple.test"] {
            assert!(DomainPattern::parse(bad).is_err(), "{bad}");
        }
        assert!(!p("allowed.test").allows("evil.test\\@allowed.test"));
    }

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        let o = origin_of("https://user:pw@Bank.Test:443/login?x#y").unwrap();
        assert_eq!((o.scheme.as_str(), o.host.as_str(), o.port), ("https", "bank.test", 443));
        assert_eq!(o.to_string(), "https://bank.test");
        assert!(o.holds("https://bank.test/account") && o.holds("blob:https://bank.test/1"));
        for other in [
            "http://bank.test/",
            "https://bank.test:8443/",
            "https://bank.test./",
            "https://evil.test\\@bank.test/",
            "about:blank",
        ] {
            assert!(!o.holds(other), "{other}");
        }
        let v6 = origin_of("http://[::1]:8080/x").unwrap();
        assert_eq!(v6.to_string(), "http://[::1]:8080");
        assert_eq!(Origin::parse(&v6.to_string()), Ok(v6));
        assert_eq!(origin_of("http://0x7f.1/").unwrap().to_string(), "http://127.0.0.1");
        for none in ["data:text/html,x", "file:///etc/passwd", "javascript:alert(1)", "bank.test"] {
            assert_eq!(origin_of(none), None, "{none}");
        }
        for bad in ["https://bank.test/login", "https://u@bank.test", "https://bank.test/?q", "about:blank", ""] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
        let json = serde_json::to_string(&Origin::parse("https://bank.test:8443/").unwrap()).unwrap();
        assert_eq!(json, "\"https://bank.test:8443\"");
    }
}

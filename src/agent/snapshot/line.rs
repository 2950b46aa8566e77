//! The snapshot's line grammar, defined once: a page's head line `Page: "Title" — URL[ (HTTP
//! 404)][ — part 2 of 3]`, and its element lines `[e12] link "About us" → https://…` — a tag
//! in brackets (a ref: `e` and digits), the element's kind (the first word), its quoted name,
//! for a link its address after ` → `, and what else the worker wrote. Every reader of a
//! snapshot line on the controller's side parses it here (`Line::parse`), never with string
//! operations of its own.
//!
//! Invariant: parsing never fails: a line without a tag is a `Line` whose `tag` is `None`.

/// How a snapshot's head line starts (the status only when it is not 2xx).
const PAGE_HEADER: &str = "Page: ";

/// One line of a snapshot, indented or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct Line<'a> {
    /// What the brackets at its start hold (`e12`), if it has them.
    pub tag: Option<&'a str>,
    /// The line after its tag: `link "About us" → http://h/about.html`.
    pub body: &'a str,
}

impl<'a> Line<'a> {
    pub fn parse(line: &'a str) -> Line<'a> {
        let line = line.trim_start();
        match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
            Some((tag, body)) => Line { tag: Some(tag), body },
            None => Line { tag: None, body: line },
        }
    }

    /// Its ref, when its tag is one.
    pub fn id(&self) -> Option<&'a str> {
        self.tag.filter(|t| is_ref(t))
    }

    /// Its kind (the first word after the tag) and the rest of the line.
    pub fn kind(&self) -> (&'a str, &'a str) {
        self.body.split_once(' ').unwrap_or((self.body, ""))
    }

    /// Its first quoted name (`link "About us" → …`: `About us`; a name may hold quotes).
    pub fn name(&self) -> Option<&'a str> {
        let (_, rest) = self.body.split_once('"')?;
        rest.rsplit_once("\" → ").map(|(name, _)| name).or_else(|| rest.split_once('"').map(|(name, _)| name))
    }

    /// A link's text and address (`link "Text" → URL`).
    pub fn link(&self) -> Option<(&'a str, &'a str)> {
        let (text, url) = self.body.strip_prefix("link \"")?.rsplit_once("\" → ")?;
        Some((text, url.trim()))
    }
}

/// Every line of `page`, parsed.
pub(in crate::agent) fn lines(page: &str) -> impl Iterator<Item = Line<'_>> {
    page.lines().map(Line::parse)
}

/// Whether `s` is a ref: `e` and digits.
pub(in crate::agent) fn is_ref(s: &str) -> bool {
    s.len() > 1 && s.starts_with('e') && s[1..].chars().all(|c| c.is_ascii_digit())
}

/// The line of `page` tagged `r`.
pub(in crate::agent) fn find<'a>(page: &'a str, r: &str) -> Option<Line<'a>> {
    lines(page).find(|l| l.tag == Some(r))
}

/// A line's body without the value its element held then (` value=…` to the end).
pub(in crate::agent) fn before_value(body: &str) -> &str {
    body.split(" value=").next().unwrap_or(body)
}

/// What identifies an element in a line's body: its kind and label, not its current value.
pub(in crate::agent) fn identity(body: &str) -> &str {
    [" value=", " (", " → "].iter().filter_map(|m| body.find(m)).min().map_or(body, |i| &body[..i]).trim()
}

/// The URL of a snapshot's head line (the title is a JSON string, so a ` — ` in it is no
/// separator).
pub(in crate::agent) fn page_url(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(PAGE_HEADER)?;
    let mut title = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    title.next()?.ok()?;
    let url = rest[title.byte_offset()..].strip_prefix(" — ")?;
    let url = url.split(" — part ").next().unwrap_or(url);
    Some(url.split(" (HTTP").next().unwrap_or(url).trim())
}

/// Whether `text` starts as a page's head line does.
pub(in crate::agent) fn is_page_head(text: &str) -> bool {
    text.starts_with(PAGE_HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_its_tag_kind_name_and_link() {
        let l = Line::parse("  [e5] link \"a \"quoted\" one\" → http://h/x.html");
        assert_eq!((l.tag, l.id(), l.kind().0), (Some("e5"), Some("e5"), "link"));
        assert_eq!(l.name(), Some("a \"quoted\" one"));
        assert_eq!(l.link(), Some(("a \"quoted\" one", "http://h/x.html")));
        let select = Line::parse("[e3] select \"Size\" name=size: S | M (selected)");
        assert_eq!(select.kind(), ("select", "\"Size\" name=size: S | M (selected)"));
        assert_eq!(select.name(), Some("Size"));
        assert_eq!(identity(select.body), "select \"Size\" name=size: S | M");
        assert_eq!(before_value("input text \"City\" name=city value=\"Paris\""), "input text \"City\" name=city");
        let untagged = Line::parse("text \"Desk lamp, 24.90 EUR\"");
        assert_eq!((untagged.tag, untagged.id(), untagged.link()), (None, None, None));
        assert_eq!(Line::parse("[x] button \"Go\"").id(), None, "a tag that is no ref");
        assert_eq!(find("[e1] a\n[e12] button \"Go\"", "e12").map(|l| l.body), Some("button \"Go\""));
        assert_eq!(page_url("Page: \"A — B\" — https://h/a (HTTP 404) — part 2 of 3"), Some("https://h/a"));
    }
}

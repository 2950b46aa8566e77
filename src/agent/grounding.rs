//! What the session has seen. A small model that has not found what the task asks for often
//! answers with a plausible guess ("New York"). The session keeps every word it has seen (the
//! task, every tool result) and the links its pages showed: an answer asked for at the end is
//! saved only when its numbers and capitalised words are among them (`answer_in_words`), and a
//! stuck session is pointed at the pages not opened yet. Once the model has been shown an image,
//! its words are no longer all here: every answer counts as seen.

use std::collections::HashSet;

/// Texts longer than this (or of more lines) are composed, not looked up: not checked.
const CHECKED_CHARS: usize = 300;
const CHECKED_LINES: usize = 3;
/// Words and links kept (a session reads many pages; this bounds the memory).
const MAX_WORDS: usize = 200_000;
const MAX_LINKS: usize = 300;
/// Unopened links named in a note.
const LINKS_SHOWN: usize = 8;

#[derive(Default)]
pub(super) struct Grounding {
    words: HashSet<String>,
    /// Links seen in snapshots, as (text, URL), in the order first seen.
    links: Vec<(String, String)>,
    /// URLs of the pages seen.
    opened: HashSet<String>,
    /// The model was shown an image: what it read there is not in these words, so every answer
    /// counts as seen.
    saw_image: bool,
}

impl Grounding {
    /// Remember what a tool returned (or the task said).
    pub fn saw(&mut self, text: &str) {
        // `1,250` on a page is `1250` in an answer too.
        let joined = numbers_joined(text);
        for word in words(text).into_iter().chain(words(&joined)) {
            if self.words.len() >= MAX_WORDS {
                break;
            }
            self.words.insert(word.to_lowercase());
        }
        for line in text.lines().map(str::trim) {
            self.saw_line(line);
        }
    }

    /// The model was shown an image (a screenshot).
    pub fn saw_image(&mut self) {
        self.saw_image = true;
    }

    fn saw_line(&mut self, line: &str) {
        if let Some(url) = super::snapshot::page_url(line) {
            self.opened.insert(url.to_string());
        }
        if let Some((text, url)) = super::snapshot::link_in(line) {
            if self.links.len() < MAX_LINKS && url.starts_with("http") && !self.links.iter().any(|(_, u)| u == url) {
                self.links.push((text.to_string(), url.to_string()));
            }
        }
    }

    /// The words of `content` that nothing seen holds, when it is short enough to be looked
    /// up; empty when it may be saved.
    pub fn unseen(&self, content: &str) -> Vec<String> {
        if self.saw_image || content.len() > CHECKED_CHARS || content.lines().count() > CHECKED_LINES {
            return Vec::new();
        }
        words(content)
            .into_iter()
            .filter(|w| w.chars().count() > 1)
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit() || c.is_uppercase()))
            .filter(|w| !self.words.contains(&w.to_lowercase()))
            .collect()
    }

    /// Pages linked from what was seen and not opened yet, for a note.
    pub fn unopened(&self) -> Vec<String> {
        self.links
            .iter()
            .filter(|(_, url)| !self.opened.contains(url.as_str()) && !super::snapshot::is_file_url(url))
            .take(LINKS_SHOWN)
            .map(|(text, url)| format!("\"{text}\" {url}"))
            .collect()
    }
}

/// The words of a text; a decimal number stays one word (`12.50`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let decimal = c == '.'
            && word.chars().last().is_some_and(|l| l.is_ascii_digit())
            && chars.peek().is_some_and(char::is_ascii_digit);
        if c.is_alphanumeric() || decimal {
            word.push(c);
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The text with each comma between two digits left out.
fn numbers_joined(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let digit = |i: Option<&char>| i.is_some_and(char::is_ascii_digit);
    (0..chars.len())
        .filter(|&i| !(chars[i] == ',' && i > 0 && digit(chars.get(i - 1)) && digit(chars.get(i + 1))))
        .map(|i| chars[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(texts: &[&str]) -> Grounding {
        let mut g = Grounding::default();
        texts.iter().for_each(|t| g.saw(t));
        g
    }

    #[test]
    fn a_guess_is_unseen_and_a_found_value_is_not() {
        let mut g = seen(&[
            "What does the Team plan cost? Save it in answer.txt.",
            "Page: \"Pricing\" — http://h/pricing.html (HTTP 200)\n[e3] link \"About us\" → http://h/about.html\n\
             [e4] link \"Home\" → http://h/\n[e5] link \"Report\" → http://h/r.pdf\ntext \"Team $45 per month, 1,250 users\"",
        ]);
        assert!(g.unseen("45").is_empty() && g.unseen("45.").is_empty());
        assert!(g.unseen("$45 per month").is_empty());
        assert!(g.unseen("1250").is_empty() && g.unseen("1,250").is_empty() && g.unseen("a,b\n1,2\n").is_empty());
        assert!(g.unseen("the team plan costs forty-five").is_empty(), "lowercase words are not checked");
        assert_eq!(g.unseen("New York"), vec!["New", "York"]);
        assert_eq!(g.unseen("1000"), vec!["1000"]);
        assert!(g.unseen(&"Nowhere ".repeat(50)).is_empty(), "a long text is composed, not looked up");
        assert_eq!(g.unopened(), vec!["\"About us\" http://h/about.html", "\"Home\" http://h/"]);
        g.saw_image();
        assert!(g.unseen("Paris").is_empty(), "what a screenshot showed is not in the words");
        let g = seen(&["Page: \"Home\" — http://h/ (HTTP 200)\n[e1] link \"About us\" → http://h/about.html"]);
        assert_eq!(g.unopened(), vec!["\"About us\" http://h/about.html"]);
    }
}

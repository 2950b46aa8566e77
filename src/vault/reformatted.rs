//! Typed values as a page writes them back: a card number masked in groups (`4111 1111 1111
//! 1111` for `4111111111111111`), a code echoed with separators (`4-9-3-8-1-7` for `493817`).
//!
//! A value with `MIN_CHARS` to `MAX_CHARS` letters and digits is also found as those characters
//! in order with a run of spaces, dashes or dots (or nothing) between any two of them. Fewer
//! would match ordinary text; a longer value (a passphrase, a paragraph) is not reformatted by
//! pages, and the bound keeps the scan cheap. Guarantees: a match starts and ends on one of the
//! value's characters, so the text around it stays; each start tried is given up at the first
//! character that differs.

/// The fewest letters and digits a value found reformatted has.
pub const MIN_CHARS: usize = 6;
/// The most: a card number, a code, an IBAN (34), a phone number.
pub const MAX_CHARS: usize = 64;
const SEPARATORS: [char; 3] = [' ', '-', '.'];

/// A typed value's letters and digits, to be found with separators between them.
#[derive(Clone)]
pub struct Spaced(Vec<char>);

impl Spaced {
    /// `value`'s letters and digits, when there are `MIN_CHARS` to `MAX_CHARS` of them.
    pub fn of(value: &str) -> Option<Spaced> {
        let chars: Vec<char> = value.chars().filter(|c| c.is_alphanumeric()).collect();
        (MIN_CHARS..=MAX_CHARS).contains(&chars.len()).then_some(Spaced(chars))
    }

    /// `text` with every match replaced by `with`; `None` when nothing matched.
    pub fn replace_in(&self, text: &str, with: &str) -> Option<String> {
        let first = self.0[0];
        let (mut out, mut copied, mut from, mut found) = (String::new(), 0, 0, false);
        while let Some(offset) = text[from..].find(first) {
            let start = from + offset;
            match self.length_at(&text[start..]) {
                Some(len) => {
                    out.push_str(&text[copied..start]);
                    out.push_str(with);
                    (copied, from, found) = (start + len, start + len, true);
                }
                None => from = start + first.len_utf8(),
            }
        }
        found.then(|| out + &text[copied..])
    }

    /// The length in bytes of a match at the start of `text`.
    fn length_at(&self, text: &str) -> Option<usize> {
        let mut rest = text.char_indices().peekable();
        for (k, want) in self.0.iter().enumerate() {
            if k > 0 {
                while rest.next_if(|(_, c)| SEPARATORS.contains(c)).is_some() {}
            }
            match rest.next() {
                Some((_, c)) if c == *want => {}
                _ => return None,
            }
        }
        Some(rest.peek().map_or(text.len(), |(i, _)| *i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrub(value: &str, text: &str) -> String {
        let spaced = Spaced::of(value).unwrap();
        spaced.replace_in(text, "[x]").unwrap_or_else(|| text.to_string())
    }

    #[test]
    fn a_value_is_found_with_separators_between_its_characters() {
        let card = "4111111111111111";
        assert_eq!(scrub(card, "card 4111 1111 1111 1111."), "card [x].");
        assert_eq!(scrub(card, "(4111-1111-1111-1111) or 4111111111111111"), "([x]) or [x]");
        assert_eq!(scrub("4111 1111 1111 1111", "n=4111111111111111;"), "n=[x];");
        assert_eq!(scrub("493817", "code 4-9-3-8-1-7 sent"), "code [x] sent");
        assert_eq!(scrub("493817", "4 9 3. 8--1 7"), "[x]");
        assert_eq!(scrub("ab12cd", "é ab.12.cd é"), "é [x] é");
    }

    #[test]
    fn other_text_stays() {
        for text in ["4111 1111 1111 1112", "4_9_3_8_1_7", "49381", "4/9/3/8/1/7", "", "4 9 3 8 1"] {
            assert_eq!(scrub("493817", text), text.replace("493817", "[x]"), "{text}");
        }
        assert_eq!(scrub("493817", "AB12CD"), "AB12CD");
        assert!(Spaced::of("12-345").is_none(), "five characters would match ordinary numbers");
        assert!(Spaced::of(&"a".repeat(MAX_CHARS + 1)).is_none());
    }
}

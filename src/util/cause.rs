//! An error with its causes, for the log: `e` and each `source()` below it joined with ": ",
//! once, where the error is finally handled. A cause whose text the message already quotes (our
//! `Display`s often name their cause) is not repeated.

use std::error::Error;

/// `e`'s message followed by each cause the message does not already hold.
pub fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let said = cause.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::chain;
    use std::fmt;

    #[derive(Debug)]
    struct Outer(std::io::Error, bool);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.1 { write!(f, "cannot read x: {}", self.0) } else { f.write_str("cannot read x") }
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn causes_are_joined_once() {
        let io = || std::io::Error::other("disk full");
        assert_eq!(chain(&Outer(io(), false)), "cannot read x: disk full");
        assert_eq!(chain(&Outer(io(), true)), "cannot read x: disk full", "a cause the message quotes is not repeated");
        assert_eq!(chain(&io()), "disk full");
    }
}

//! A download's progress bar for the console: on stderr, only when it is a terminal, redrawn
//! at most ten times a second and erased when the download ends, so piped or scripted output
//! never sees it.

/// A download's progress on the terminal (stderr), redrawn at most ten times a second and
/// erased at the end; nothing at all when stderr is not a terminal.
pub struct Progress<'a> {
    name: &'a str,
    on: bool,
    drawn: Option<std::time::Instant>,
}

impl<'a> Progress<'a> {
    pub fn new(name: &'a str, on: bool) -> Progress<'a> {
        Progress { name, on, drawn: None }
    }

    pub fn show(&mut self, bytes: u64, total: Option<u64>) {
        if !self.on || self.drawn.is_some_and(|t| t.elapsed() < std::time::Duration::from_millis(100)) {
            return;
        }
        self.drawn = Some(std::time::Instant::now());
        let mb = |n: u64| n as f64 / (1024.0 * 1024.0);
        let line = match total.filter(|t| *t > 0) {
            Some(t) => {
                let done = (bytes.min(t) * 30 / t) as usize;
                let bar = format!("{}{}", "#".repeat(done), "-".repeat(30 - done));
                format!("  ↓ {} [{bar}] {:.1}/{:.1} MB {:>3}%", self.name, mb(bytes), mb(t), bytes.min(t) * 100 / t)
            }
            None => format!("  ↓ {} {:.1} MB", self.name, mb(bytes)),
        };
        eprint!("\r\x1b[K{line}");
    }

    pub fn clear(&self) {
        if self.on && self.drawn.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}

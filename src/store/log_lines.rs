//! Reading a session's `log.jsonl` back: the offsets of its complete lines (an index the
//! session keeps, so a page of the log is one seek), and a page of lines from an offset.

use super::{LOG_JSONL, SessionDir};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};

impl SessionDir {
    /// Byte offsets of every complete line of `log.jsonl` (a torn last line is ignored).
    pub fn index_log(&self) -> io::Result<Vec<u64>> {
        let file = match File::open(self.path(LOG_JSONL)) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut reader = BufReader::new(file);
        let mut offsets = Vec::new();
        let mut offset = 0u64;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            offsets.push(offset);
            offset += n as u64;
        }
        Ok(offsets)
    }

    /// Up to `max` lines of `log.jsonl` starting at byte `from`.
    pub fn read_log_lines(&self, from: u64, max: usize) -> io::Result<Vec<String>> {
        let mut file = File::open(self.path(LOG_JSONL))?;
        file.seek(SeekFrom::Start(from))?;
        let mut out = Vec::new();
        for line in BufReader::new(file).lines() {
            if out.len() >= max {
                break;
            }
            out.push(line?);
        }
        Ok(out)
    }
}

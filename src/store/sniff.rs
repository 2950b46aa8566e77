//! How each zip member is written, decided from its content, not its name: a trial deflate
//! of the first 64 KiB at the fast level. Members that would shrink by less than 10 % (media,
//! archives, encrypted or random data) are stored; the rest are deflated at level 1, which on
//! text gives most of the default level's ratio at several times its speed.

use flate2::Compression;
use flate2::write::DeflateEncoder;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

const SAMPLE: usize = 64 * 1024;

/// The level compressible members are deflated at.
pub const FAST_LEVEL: i64 = 1;

/// Whether `src` is worth deflating; reads a sample and rewinds to the start.
pub fn compressible(src: &mut File) -> io::Result<bool> {
    let mut sample = Vec::with_capacity(SAMPLE);
    Read::by_ref(src).take(SAMPLE as u64).read_to_end(&mut sample)?;
    src.seek(SeekFrom::Start(0))?;
    Ok(worth_deflating(&sample))
}

fn worth_deflating(sample: &[u8]) -> bool {
    if sample.len() < 512 {
        // Too small to matter either way; deflate costs nothing here.
        return !sample.is_empty();
    }
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(sample.len()), Compression::new(FAST_LEVEL as u32));
    let packed = encoder.write_all(sample).and_then(|()| encoder.finish()).map(|v| v.len()).unwrap_or(sample.len());
    packed * 10 < sample.len() * 9
}

#[cfg(test)]
mod tests {
    use super::worth_deflating;

    #[test]
    fn text_is_deflated_random_is_stored() {
        let text = "GET /index.html 200 1234 \"Mozilla/5.0\"\n".repeat(2000);
        assert!(worth_deflating(text.as_bytes()));
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let random: Vec<u8> = (0..65536)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(!worth_deflating(&random));
    }
}

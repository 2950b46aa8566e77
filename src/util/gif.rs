//! Animated GIFs made of one-frame GIFs without decoding a pixel: the worker encodes each
//! recording frame (`bin/agent-worker/frames/`), and the daemon only checks and concatenates
//! their blocks under one header (GIF is a sequence of blocks), so it carries no encoder.
//!
//! Guarantees: a frame is taken only when its blocks are whole and its image has a palette of
//! its own (a frame leaning on its file's global palette would lose it); the animation has one
//! logical screen as large as its largest frame, loops, and ends with the trailer. `thin` picks
//! frames evenly, the first and the last always among them.

use std::ops::Range;

/// A checked one-frame GIF: its size and the blocks to copy (graphic control extensions and
/// the image); comments and application extensions are left behind.
pub struct Frame {
    pub width: u16,
    pub height: u16,
    pub blocks: Vec<Range<usize>>,
}

/// `gif`'s blocks, or None when it is no whole GIF of images with local palettes.
pub fn frame(gif: &[u8]) -> Option<Frame> {
    if gif.len() < 13 || !(gif.starts_with(b"GIF89a") || gif.starts_with(b"GIF87a")) {
        return None;
    }
    let (width, height) = (u16::from_le_bytes([gif[6], gif[7]]), u16::from_le_bytes([gif[8], gif[9]]));
    let mut at = 13 + palette_len(gif[10]);
    let mut blocks = Vec::new();
    let mut images = 0;
    loop {
        let start = at;
        match *gif.get(at)? {
            0x3b if at + 1 == gif.len() && images > 0 => return Some(Frame { width, height, blocks }),
            0x21 => {
                let label = *gif.get(at + 1)?;
                at = sub_blocks(gif, at + 2)?;
                if label == 0xf9 {
                    blocks.push(start..at);
                }
            }
            0x2c => {
                let flags = *gif.get(at + 9)?;
                if flags & 0x80 == 0 {
                    return None;
                }
                at += 10 + palette_len(flags);
                gif.get(at)?; // the LZW code size
                at = sub_blocks(gif, at + 1)?;
                blocks.push(start..at);
                images += 1;
            }
            _ => return None,
        }
    }
}

/// The bytes of a colour table a packed field announces.
fn palette_len(flags: u8) -> usize {
    if flags & 0x80 == 0 { 0 } else { 3 << ((flags & 7) + 1) }
}

/// Past the data sub-blocks starting at `at` (each a length byte and that many bytes; a zero
/// length ends them), or None when they run past the end.
fn sub_blocks(gif: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let n = *gif.get(at)? as usize;
        at += 1 + n;
        if n == 0 {
            return Some(at);
        }
        if at > gif.len() {
            return None;
        }
    }
}

/// One looping animation of `frames` (each a GIF that `frame` accepted, with its reading).
pub fn animate(frames: &[(Vec<u8>, Frame)]) -> Vec<u8> {
    let width = frames.iter().map(|(_, f)| f.width).max().unwrap_or(1);
    let height = frames.iter().map(|(_, f)| f.height).max().unwrap_or(1);
    let mut out = Vec::with_capacity(frames.iter().map(|(b, _)| b.len()).sum::<usize>() + 64);
    out.extend_from_slice(b"GIF89a");
    out.extend_from_slice(&width.to_le_bytes());
    out.extend_from_slice(&height.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0]); // no global palette, background 0, square pixels
    // NETSCAPE2.0: loop for ever.
    out.extend_from_slice(b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00");
    for (bytes, f) in frames {
        for r in &f.blocks {
            out.extend_from_slice(&bytes[r.clone()]);
        }
    }
    out.push(0x3b);
    out
}

/// `keep` of `n` indices spread evenly, the first and the last among them (all when `keep ≥ n`).
pub fn thin(n: usize, keep: usize) -> Vec<usize> {
    match (n, keep) {
        (0, _) | (_, 0) => Vec::new(),
        _ if keep >= n => (0..n).collect(),
        (_, 1) => vec![n - 1],
        _ => (0..keep).map(|i| i * (n - 1) / (keep - 1)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 one-frame GIF as the worker writes it: no global palette, a control extension, an
    /// image with a two-colour local palette.
    fn one(w: u8) -> Vec<u8> {
        let mut g = b"GIF89a".to_vec();
        g.extend([w, 0, 1, 0, 0, 0, 0]);
        g.extend([0x21, 0xf9, 4, 0x08, 100, 0, 0, 0]);
        g.extend([0x2c, 0, 0, 0, 0, w, 0, 1, 0, 0x80]);
        g.extend([0, 0, 0, 255, 255, 255]);
        g.extend([2, 2, 0x4c, 0x01, 0, 0x3b]);
        g
    }

    #[test]
    fn frames_are_read_and_concatenated_into_one_looping_gif() {
        let a = frame(&one(1)).unwrap();
        assert_eq!((a.width, a.height, a.blocks.len()), (1, 1, 2));
        let frames = vec![(one(1), frame(&one(1)).unwrap()), (one(3), frame(&one(3)).unwrap())];
        let gif = animate(&frames);
        assert!(gif.starts_with(b"GIF89a") && gif.ends_with(&[0x3b]));
        assert_eq!(&gif[6..8], &[3, 0], "the largest frame's width");
        // The animation reads back as blocks: two control extensions and two images.
        let again = frame(&gif).expect("a whole GIF");
        assert_eq!(again.blocks.len(), 4);
    }

    #[test]
    fn broken_frames_are_refused() {
        let good = one(1);
        assert!(frame(&good[..good.len() - 1]).is_none(), "no trailer");
        assert!(frame(&good[..20]).is_none(), "cut inside a block");
        assert!(frame(b"PNG....").is_none());
        let mut no_palette = good.clone();
        no_palette[13 + 8 + 9] = 0; // the image's flags: no local palette
        assert!(frame(&no_palette).is_none());
        let mut extra = good.clone();
        extra.push(0);
        assert!(frame(&extra).is_none(), "bytes after the trailer");
        let header_only = b"GIF89a\x01\x00\x01\x00\x00\x00\x00\x3b";
        assert!(frame(header_only).is_none(), "no image");
    }

    #[test]
    fn thinning_is_even_and_keeps_the_ends() {
        assert_eq!(thin(5, 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(thin(10, 4), vec![0, 3, 6, 9]);
        assert_eq!(thin(7, 1), vec![6]);
        assert!(thin(0, 3).is_empty() && thin(3, 0).is_empty());
        let t = thin(1000, 300);
        assert_eq!((t.len(), t[0], t[299]), (300, 0, 999));
        assert!(t.windows(2).all(|w| w[1] > w[0]));
    }
}

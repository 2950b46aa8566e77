//! One recording frame as a GIF: a fixed palette (a 6×7×6 colour cube and the four colours the
//! frames are drawn with, so a mask stays exactly `MASK`), each pixel its nearest entry, no
//! dithering (flat pages stay flat, and compress), encoded by the `gif` crate.
//!
//! Guarantees: the file is a whole GIF89a (the crate's empty global palette unused), one graphic control
//! extension (the frame's delay; disposal to the background, so a smaller frame after a larger
//! one leaves nothing behind) and one image with its local palette: what the controller's
//! `recording.rs` reads and concatenates.

use super::{BAR, MARK, MASK, Rgb, TEXT};

/// How long a frame shows, in hundredths of a second.
const DELAY: u16 = 100;
const SPECIAL: [[u8; 3]; 4] = [MASK, MARK, BAR, TEXT];
const LEVELS: [usize; 3] = [6, 7, 6];

/// The palette: the cube first (red slowest), then the special colours; 256 entries.
fn palette() -> Vec<u8> {
    let level = |i: usize, n: usize| (i * 255 / (n - 1)) as u8;
    let mut p = Vec::with_capacity(768);
    for r in 0..LEVELS[0] {
        for g in 0..LEVELS[1] {
            for b in 0..LEVELS[2] {
                p.extend([level(r, LEVELS[0]), level(g, LEVELS[1]), level(b, LEVELS[2])]);
            }
        }
    }
    for c in SPECIAL {
        p.extend(c);
    }
    p
}

/// Each pixel's palette index.
fn indices(img: &Rgb) -> Vec<u8> {
    let near = |v: u8, n: usize| (v as usize * (n - 1) + 127) / 255;
    let cube = LEVELS[0] * LEVELS[1] * LEVELS[2];
    img.data
        .chunks_exact(3)
        .map(|p| match SPECIAL.iter().position(|s| s == p) {
            Some(i) => (cube + i) as u8,
            None => {
                let (r, g, b) = (near(p[0], LEVELS[0]), near(p[1], LEVELS[1]), near(p[2], LEVELS[2]));
                ((r * LEVELS[1] + g) * LEVELS[2] + b) as u8
            }
        })
        .collect()
}

/// The image as a one-frame GIF.
pub fn encode(img: &Rgb) -> Result<Vec<u8>, String> {
    let (w, h) = match (u16::try_from(img.width), u16::try_from(img.height)) {
        (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
        _ => return Err(format!("a {}×{} frame does not fit a GIF", img.width, img.height)),
    };
    let frame = gif::Frame {
        width: w,
        height: h,
        delay: DELAY,
        dispose: gif::DisposalMethod::Background,
        palette: Some(palette()),
        buffer: std::borrow::Cow::Owned(indices(img)),
        ..gif::Frame::default()
    };
    let mut out = Vec::new();
    {
        let mut encoder = gif::Encoder::new(&mut out, w, h, &[]).map_err(|e| format!("GIF encoding failed: {e}"))?;
        encoder.write_frame(&frame).map_err(|e| format!("GIF encoding failed: {e}"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_a_whole_gif_with_exact_special_colours() {
        let mut data = MASK.repeat(4 * 2);
        data.extend([255u8, 255, 255].repeat(4 * 2));
        let img = Rgb { data, width: 4, height: 4 };
        let gif = encode(&img).unwrap();
        assert!(gif.starts_with(b"GIF89a"));
        assert_eq!(gif.last(), Some(&0x3b), "the trailer");
        // The crate writes an empty global palette's two entries; the image has its own.
        let global = if gif[10] & 0x80 == 0 { 0 } else { 3 << ((gif[10] & 7) + 1) };
        assert_eq!(&gif[13 + global..15 + global], &[0x21, 0xf9], "the graphic control extension first");
        let image = 13 + global + 8;
        assert_eq!(gif[image], 0x2c);
        assert_eq!(gif[image + 9] & 0x87, 0x87, "a local palette of 256 colours");
        let idx = indices(&img);
        assert!(idx[..8].iter().all(|&i| i == 252), "the mask is its own entry");
        let p = palette();
        assert_eq!(p.len(), 768);
        assert_eq!(&p[252 * 3..253 * 3], &MASK);
        assert_eq!(&p[idx[8] as usize * 3..][..3], &[255, 255, 255], "white is in the cube");
        assert!(encode(&Rgb { data: vec![], width: 0, height: 0 }).is_err());
    }
}

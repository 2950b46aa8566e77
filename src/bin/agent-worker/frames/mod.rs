//! Pictures the session keeps: masked screenshots and the recording's frames.
//!
//! A screenshot's secret fields (their boxes found where the pixels are made: `masks.js` in a
//! page, the accessibility tree on a desktop) are painted over here, in solid `MASK`, before
//! the image leaves the worker: no unmasked copy is written or sent. A recording frame is the
//! page or screen after an acting step, masked the same way, shrunk to at most `FRAME_WIDTH`
//! pixels, with a mark where a click landed and a caption bar below (`3 click "Send"`, the
//! words the controller sends), encoded as a one-frame GIF (`gif.rs`) that the controller only
//! concatenates.
//!
//! Guarantees: every function here is pure over pixels (tested without a browser or display);
//! a box is painted over whole pixels, rounded outwards and clipped to the image, so no edge
//! of a field shows; a frame is never upscaled.

pub mod font;
mod gif;

pub use crate::desktop::capture::Rgb;
pub use gif::encode as gif_frame;

/// The mask's colour: one solid slate, the same in every image (tests look for it).
pub const MASK: [u8; 3] = [0x2b, 0x2f, 0x3a];
/// The click mark's colour, the caption bar's and its text's.
pub const MARK: [u8; 3] = [0xe0, 0x20, 0x30];
pub const BAR: [u8; 3] = [0x10, 0x10, 0x10];
pub const TEXT: [u8; 3] = [0xff, 0xff, 0xff];
/// The widest a recording frame is.
pub const FRAME_WIDTH: usize = 640;

/// A box in image pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    /// The box in another image's pixels (`k` of those per one of these).
    pub fn scaled(self, k: f64) -> Rect {
        Rect { x: self.x * k, y: self.y * k, w: self.w * k, h: self.h * k }
    }
}

/// Fill `r` (whole pixels, rounded outwards, clipped) with `colour`.
pub fn fill(img: &mut Rgb, r: Rect, colour: [u8; 3]) {
    if !(r.x.is_finite() && r.y.is_finite() && r.w.is_finite() && r.h.is_finite()) || r.w <= 0.0 || r.h <= 0.0 {
        return;
    }
    let clip = |v: f64, max: usize| (v.max(0.0) as usize).min(max);
    let (x0, y0) = (clip(r.x.floor(), img.width), clip(r.y.floor(), img.height));
    let (x1, y1) = (clip((r.x + r.w).ceil(), img.width), clip((r.y + r.h).ceil(), img.height));
    for y in y0..y1 {
        let row = &mut img.data[(y * img.width + x0) * 3..(y * img.width + x1) * 3];
        for p in row.chunks_exact_mut(3) {
            p.copy_from_slice(&colour);
        }
    }
}

/// Paint every secret field's box over.
pub fn mask(img: &mut Rgb, rects: &[Rect]) {
    for r in rects {
        fill(img, *r, MASK);
    }
}

/// A ring around the point a click landed on, with a dot at its centre.
pub fn mark(img: &mut Rgb, x: f64, y: f64) {
    let (outer, inner) = (10.0f64, 7.0f64);
    let span = outer.ceil() as i64;
    let (cx, cy) = (x.round() as i64, y.round() as i64);
    for dy in -span..=span {
        for dx in -span..=span {
            let d = ((dx * dx + dy * dy) as f64).sqrt();
            let (px, py) = (cx + dx, cy + dy);
            if (d <= outer && d >= inner || d <= 2.0) && px >= 0 && py >= 0 {
                let (px, py) = (px as usize, py as usize);
                if px < img.width && py < img.height {
                    img.data[(py * img.width + px) * 3..][..3].copy_from_slice(&MARK);
                }
            }
        }
    }
}

/// The image with a caption bar below it: `text` in white on black, cut with `...` to fit.
pub fn caption(img: &Rgb, text: &str) -> Rgb {
    let scale = if img.width >= 400 { 2 } else { 1 };
    let pad = 4 * scale;
    let bar = font::CELL_H * scale + 2 * pad;
    let mut out = Rgb { data: img.data.clone(), width: img.width, height: img.height + bar };
    out.data.extend(BAR.repeat(img.width * bar));
    let advance = (font::CELL_W + 1) * scale;
    let room = img.width.saturating_sub(2 * pad) / advance;
    let chars: Vec<char> = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let shown: Vec<char> = if chars.len() > room {
        chars.iter().take(room.saturating_sub(3)).copied().chain("...".chars()).collect()
    } else {
        chars
    };
    for (i, c) in shown.into_iter().enumerate() {
        let left = pad + i * advance;
        for row in 0..font::CELL_H {
            for col in (0..font::CELL_W).filter(|&col| font::ink(c, col, row)) {
                let at = Rect {
                    x: (left + col * scale) as f64,
                    y: (img.height + pad + row * scale) as f64,
                    w: scale as f64,
                    h: scale as f64,
                };
                fill(&mut out, at, TEXT);
            }
        }
    }
    out
}

/// Why a PNG could not be turned into RGB.
#[derive(Debug, thiserror::Error)]
pub enum BadPng {
    #[error("unreadable PNG: {0}")]
    Unreadable(#[from] png::DecodingError),
    #[error("a PNG too large to decode")]
    TooLarge,
    #[error("a PNG of an unexpected layout")]
    Layout,
}

/// A PNG (any colour type, 8 or 16 bits) as RGB.
pub fn decode_png(bytes: &[u8]) -> Result<Rgb, BadPng> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size().ok_or(BadPng::TooLarge)?];
    let info = reader.next_frame(&mut buf)?;
    let (w, h) = (info.width as usize, info.height as usize);
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let data = match channels {
        3 => pixels.to_vec(),
        4 => pixels.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        2 => pixels.chunks_exact(2).flat_map(|p| [p[0], p[0], p[0]]).collect(),
        _ => pixels.iter().flat_map(|&g| [g, g, g]).collect(),
    };
    if data.len() != w * h * 3 {
        return Err(BadPng::Layout);
    }
    Ok(Rgb { data, width: w, height: h })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(w: usize, h: usize, c: [u8; 3]) -> Rgb {
        Rgb { data: c.repeat(w * h), width: w, height: h }
    }

    fn at(img: &Rgb, x: usize, y: usize) -> [u8; 3] {
        let i = (y * img.width + x) * 3;
        [img.data[i], img.data[i + 1], img.data[i + 2]]
    }

    #[test]
    fn masks_cover_whole_pixels_and_stay_inside() {
        let mut img = flat(20, 10, [255; 3]);
        mask(&mut img, &[Rect { x: 2.5, y: 1.2, w: 3.0, h: 2.0 }, Rect { x: 18.0, y: 8.0, w: 9.0, h: 9.0 }]);
        // 2.5..5.5 → columns 2..=5, 1.2..3.2 → rows 1..=3.
        for y in 0..10 {
            for x in 0..20 {
                let inside = ((2..=5).contains(&x) && (1..=3).contains(&y)) || (x >= 18 && y >= 8);
                assert_eq!(at(&img, x, y) == MASK, inside, "pixel {x},{y}");
            }
        }
        // Nonsense boxes change nothing.
        let before = img.data.clone();
        mask(&mut img, &[Rect { x: f64::NAN, y: 0.0, w: 5.0, h: 5.0 }, Rect { x: 1.0, y: 1.0, w: -3.0, h: 2.0 }]);
        assert_eq!(img.data, before);
    }

    #[test]
    fn captions_go_below_and_fit() {
        let img = flat(640, 100, [200; 3]);
        let out = caption(&img, "3 click \"Send\"");
        assert_eq!(out.width, 640);
        assert!(out.height > 100);
        assert_eq!(&out.data[..img.data.len()], &img.data[..], "the picture itself is untouched");
        let bar = &out.data[img.data.len()..];
        assert!(bar.chunks_exact(3).any(|p| p == TEXT) && bar.chunks_exact(3).any(|p| p == BAR));
        // A long caption is cut, never drawn past the edge.
        let long = caption(&flat(100, 10, [0; 3]), &"x".repeat(500));
        assert_eq!(long.data.len(), long.width * long.height * 3);
    }

    #[test]
    fn a_mark_rings_the_point() {
        let mut img = flat(50, 50, [255; 3]);
        mark(&mut img, 25.0, 25.0);
        assert_eq!(at(&img, 25, 25), MARK, "the dot");
        assert_eq!(at(&img, 25 + 9, 25), MARK, "the ring");
        assert_eq!(at(&img, 25 + 5, 25), [255; 3], "inside the ring");
        mark(&mut img, 0.0, 49.0); // at the edge: clipped, no panic
    }

    #[test]
    fn png_round_trip() {
        let mut img = flat(8, 4, [10, 20, 30]);
        fill(&mut img, Rect { x: 0.0, y: 0.0, w: 1.0, h: 1.0 }, MASK);
        let png = crate::desktop::capture::encode_png(&img).unwrap();
        let back = decode_png(&png).unwrap();
        assert_eq!((back.width, back.height), (8, 4));
        assert_eq!(back.data, img.data);
        assert!(decode_png(b"not a png").is_err());
    }
}

//! Screenshots: the root window's pixels (one GetImage, ZPixmap), turned into RGB, shrunk to
//! the width the model gets with an area-average filter, and encoded: JPEG for the model, PNG
//! at full resolution for the session's record.
//!
//! Everything after the GetImage is a pure function over byte slices, so it is tested without
//! an X server. Invariants: the image is never upscaled; the aspect ratio is kept (height
//! rounded); `scale` is screen pixels per image pixel along x (and `scale_y` along y), the
//! factor that maps the model's coordinates back to the screen.

use super::x::{PixelFormat, X};
use crate::error::WorkerError;
use std::time::Instant;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat};

/// What the controller may ask for: the image width and the JPEG quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShotSettings {
    pub width: u32,
    pub quality: u8,
}

impl Default for ShotSettings {
    fn default() -> ShotSettings {
        ShotSettings { width: 1280, quality: 70 }
    }
}

impl ShotSettings {
    /// `{"width": N, "quality": Q}`, each clamped (320..=3840, 10..=95); absent keys keep `self`.
    pub fn with(self, v: &serde_json::Value) -> ShotSettings {
        let width = v["width"].as_u64().map_or(self.width, |w| w.clamp(320, 3840) as u32);
        let quality = v["quality"].as_u64().map_or(self.quality, |q| q.clamp(10, 95) as u8);
        ShotSettings { width, quality }
    }
}

/// An RGB image, 3 bytes a pixel, rows packed.
pub struct Rgb {
    pub data: Vec<u8>,
    pub width: usize,
    pub height: usize,
}

/// One screenshot, encoded, with the times each stage took.
pub struct Shot {
    pub jpeg: Vec<u8>,
    pub png: Vec<u8>,
    pub width: usize,
    pub height: usize,
    pub screen_width: usize,
    pub screen_height: usize,
    pub scale: f64,
    pub scale_y: f64,
    /// Milliseconds: capture (GetImage + RGB), scale, jpeg, png.
    pub timings: [f64; 4],
}

/// Take a screenshot of the whole screen at `settings`; `paint` works on the full-size
/// pixels before anything is shrunk or encoded (the masks).
pub fn shot(x: &mut X, settings: ShotSettings, paint: impl FnOnce(&mut Rgb)) -> Result<Shot, WorkerError> {
    let t = Instant::now();
    let mut full = grab(x)?;
    paint(&mut full);
    let t_capture = t.elapsed();
    let small = downscale(&full, settings.width as usize);
    let t_scale = t.elapsed();
    let img = small.as_ref().unwrap_or(&full);
    let jpeg = encode_jpeg(img, settings.quality)?;
    let t_jpeg = t.elapsed();
    let png = encode_png(&full)?;
    let t_png = t.elapsed();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    Ok(Shot {
        scale: full.width as f64 / img.width as f64,
        scale_y: full.height as f64 / img.height as f64,
        width: img.width,
        height: img.height,
        screen_width: full.width,
        screen_height: full.height,
        jpeg,
        png,
        timings: [ms(t_capture), ms(t_scale - t_capture), ms(t_jpeg - t_scale), ms(t_png - t_jpeg)],
    })
}

/// The root window's pixels as RGB.
pub fn grab(x: &mut X) -> Result<Rgb, WorkerError> {
    let (w, h) = x.refresh_size()?;
    let reply = x.conn.get_image(ImageFormat::Z_PIXMAP, x.root, 0, 0, w, h, !0)?.reply()?;
    let data = to_rgb(&reply.data, w as usize, h as usize, &x.format)
        .ok_or_else(|| WorkerError::Unavailable("the X server sent a screenshot of an unexpected size".into()))?;
    Ok(Rgb { data, width: w as usize, height: h as usize })
}

/// ZPixmap bytes in `format` → packed RGB; None when `data` is too short for `w`×`h`.
pub fn to_rgb(data: &[u8], w: usize, h: usize, format: &PixelFormat) -> Option<Vec<u8>> {
    let bpp = format.bits_per_pixel as usize;
    let pad = (format.scanline_pad as usize).max(8);
    let stride = (w * bpp).div_ceil(pad) * pad / 8;
    if data.len() < stride * h.saturating_sub(1) + w * bpp / 8 {
        return None;
    }
    let mut out = vec![0u8; w * h * 3];
    let common = bpp == 32
        && !format.msb_first
        && (format.red_mask, format.green_mask, format.blue_mask) == (0xff0000, 0xff00, 0xff);
    for (y, dst) in out.chunks_exact_mut(w * 3).enumerate() {
        let row = &data[y * stride..];
        if common {
            // B G R X in memory: the layout of nearly every X server today.
            for (d, s) in dst.chunks_exact_mut(3).zip(row.chunks_exact(4)) {
                d[0] = s[2];
                d[1] = s[1];
                d[2] = s[0];
            }
        } else {
            generic_row(row, dst, format);
        }
    }
    Some(out)
}

/// Any 16/24/32-bit true-colour layout, by its masks.
fn generic_row(row: &[u8], dst: &mut [u8], f: &PixelFormat) {
    let bytes = f.bits_per_pixel as usize / 8;
    let channel = |pixel: u32, mask: u32| -> u8 {
        if mask == 0 {
            return 0;
        }
        let v = (pixel & mask) >> mask.trailing_zeros();
        let max = mask >> mask.trailing_zeros();
        ((v * 255 + max / 2) / max) as u8
    };
    for (d, s) in dst.chunks_exact_mut(3).zip(row.chunks_exact(bytes)) {
        let pixel = if f.msb_first {
            s.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32)
        } else {
            s.iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32)
        };
        d[0] = channel(pixel, f.red_mask);
        d[1] = channel(pixel, f.green_mask);
        d[2] = channel(pixel, f.blue_mask);
    }
}

/// The image shrunk to `target` pixels wide (height in proportion, rounded), each output pixel
/// the average of the source box it covers; None when it is not wider than `target`.
pub fn downscale(src: &Rgb, target: usize) -> Option<Rgb> {
    let (sw, sh) = (src.width, src.height);
    if target == 0 || sw <= target || sh == 0 {
        return None;
    }
    let tw = target;
    let th = ((sh * tw + sw / 2) / sw).max(1);
    let span = |i: usize, from: usize, to: usize| {
        let a = i * from / to;
        (a, ((i + 1) * from / to).max(a + 1))
    };
    let cols: Vec<(usize, usize)> = (0..tw).map(|x| span(x, sw, tw)).collect();
    let mut acc = vec![0u32; tw * 3];
    let mut out = vec![0u8; tw * th * 3];
    for (y, dst) in out.chunks_exact_mut(tw * 3).enumerate() {
        let (y0, y1) = span(y, sh, th);
        acc.fill(0);
        for sy in y0..y1 {
            let row = &src.data[sy * sw * 3..(sy + 1) * sw * 3];
            for (a, &(x0, x1)) in acc.chunks_exact_mut(3).zip(&cols) {
                for p in row[x0 * 3..x1 * 3].chunks_exact(3) {
                    a[0] += p[0] as u32;
                    a[1] += p[1] as u32;
                    a[2] += p[2] as u32;
                }
            }
        }
        let rows = (y1 - y0) as u32;
        for ((d, a), &(x0, x1)) in dst.chunks_exact_mut(3).zip(acc.chunks_exact(3)).zip(&cols) {
            let n = rows * (x1 - x0) as u32;
            for c in 0..3 {
                d[c] = ((a[c] + n / 2) / n) as u8;
            }
        }
    }
    Some(Rgb { data: out, width: tw, height: th })
}

pub fn encode_jpeg(img: &Rgb, quality: u8) -> Result<Vec<u8>, WorkerError> {
    let too_big = || WorkerError::Unavailable(format!("a {}×{} screen is too large for JPEG", img.width, img.height));
    let w = u16::try_from(img.width).map_err(|_| too_big())?;
    let h = u16::try_from(img.height).map_err(|_| too_big())?;
    let mut out = Vec::with_capacity(img.width * img.height / 4);
    jpeg_encoder::Encoder::new(&mut out, quality)
        .encode(&img.data, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| WorkerError::Unavailable(format!("JPEG encoding failed: {e}")))?;
    Ok(out)
}

/// Full resolution, the fastest compression (the Up filter and fdeflate: a screen still compresses well).
pub fn encode_png(img: &Rgb) -> Result<Vec<u8>, WorkerError> {
    let fail = |e: png::EncodingError| WorkerError::Unavailable(format!("PNG encoding failed: {e}"));
    let mut out = Vec::with_capacity(img.width * img.height / 2);
    let mut enc = png::Encoder::new(&mut out, img.width as u32, img.height as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fastest);
    let mut writer = enc.write_header().map_err(fail)?;
    writer.write_image_data(&img.data).map_err(fail)?;
    writer.finish().map_err(fail)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BGRX: PixelFormat = PixelFormat {
        bits_per_pixel: 32,
        scanline_pad: 32,
        msb_first: false,
        red_mask: 0xff0000,
        green_mask: 0xff00,
        blue_mask: 0xff,
    };

    #[test]
    fn zpixmap_layouts_become_rgb() {
        assert_eq!(to_rgb(&[3, 2, 1, 0, 30, 20, 10, 0], 2, 1, &BGRX).unwrap(), vec![1, 2, 3, 10, 20, 30]);
        assert!(to_rgb(&[0; 7], 2, 1, &BGRX).is_none(), "short data is refused, not read past");
        // 16-bit 5-6-5, LSB first, rows padded to 32 bits: pure red, then white.
        let rgb565 = PixelFormat { bits_per_pixel: 16, red_mask: 0xf800, green_mask: 0x7e0, blue_mask: 0x1f, ..BGRX };
        let data = [0x00, 0xf8, 0xff, 0xff, 0x1f, 0x00, 0, 0];
        assert_eq!(to_rgb(&data, 2, 2, &rgb565).unwrap()[..6], [255, 0, 0, 255, 255, 255]);
        assert_eq!(to_rgb(&data, 2, 2, &rgb565).unwrap()[6..9], [0, 0, 255]);
        let msb = PixelFormat { msb_first: true, ..BGRX };
        assert_eq!(to_rgb(&[0, 1, 2, 3], 1, 1, &msb).unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn downscale_averages_areas_keeps_aspect_never_upscales() {
        // 4×2: left half black, right half white → 2×1: black, white.
        let mut data = Vec::new();
        for _ in 0..2 {
            data.extend([0u8; 6]);
            data.extend([255u8; 6]);
        }
        let img = Rgb { data, width: 4, height: 2 };
        let small = downscale(&img, 2).unwrap();
        assert_eq!((small.width, small.height), (2, 1));
        assert_eq!(small.data, vec![0, 0, 0, 255, 255, 255]);
        assert!(downscale(&img, 4).is_none() && downscale(&img, 8).is_none());
        // 1920×1080 → 1280×720, a flat colour stays that colour.
        let flat = Rgb { data: [200u8, 100, 50].repeat(1920 * 1080), width: 1920, height: 1080 };
        let small = downscale(&flat, 1280).unwrap();
        assert_eq!((small.width, small.height), (1280, 720));
        assert!(small.data.chunks_exact(3).all(|p| p == [200, 100, 50]));
        let odd = Rgb { data: vec![9; 1366 * 768 * 3], width: 1366, height: 768 };
        assert_eq!(downscale(&odd, 1280).map(|s| (s.width, s.height)), Some((1280, 720)));
    }

    #[test]
    fn settings_clamp() {
        let s = ShotSettings::default();
        assert_eq!(
            s.with(&serde_json::json!({"width": 100, "quality": 200})),
            ShotSettings { width: 320, quality: 95 }
        );
        assert_eq!(s.with(&serde_json::json!({"quality": 40})), ShotSettings { width: 1280, quality: 40 });
        assert_eq!(s.with(&serde_json::Value::Null), s);
    }

    #[test]
    fn encoders_write_their_formats() {
        let img = Rgb { data: vec![128; 16 * 8 * 3], width: 16, height: 8 };
        assert!(encode_jpeg(&img, 70).unwrap().starts_with(&[0xff, 0xd8]));
        assert!(encode_png(&img).unwrap().starts_with(b"\x89PNG"));
    }
}

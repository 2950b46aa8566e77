//! The browser's pictures with their secrets painted over: screenshots (for the model, a
//! person taking over, the step images) and the recording's frames (`frames/`).
//!
//! The secret fields' boxes come from `masks.js` just before and just after the capture (a
//! field that moved in between is painted over where it was and where it is), are scaled
//! from CSS pixels to the image's by the image's own width, and painted into the decoded
//! pixels before anything is encoded again. Guarantees: an image whose boxes cannot be read is
//! not given out at all (the command fails, saying why); a page with no secret field keeps
//! Chromium's own bytes; the last click of the step before a frame is marked on it.

use super::Browser;
use crate::error::WorkerError;
use crate::frames::{self, Rect};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

impl Browser {
    /// The secret fields' boxes, in CSS pixels of the viewport (or of the document: `whole`).
    fn secret_boxes(&mut self, whole: bool) -> Result<Vec<Rect>, WorkerError> {
        let found = self.eval(&format!("window.__acMasks.rects({whole})")).map_err(|e| {
            WorkerError::Page(format!("no picture was taken: the page's secret fields could not be found ({e})"))
        })?;
        let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        let boxes = found.as_array().map(Vec::as_slice).unwrap_or_default();
        Ok(boxes.iter().map(|b| Rect { x: num(&b["x"]), y: num(&b["y"]), w: num(&b["w"]), h: num(&b["h"]) }).collect())
    }

    /// A capture (`Page.captureScreenshot` with `params`) showing `css_width` CSS pixels across
    /// (`whole`: the document, not the viewport), decoded, with the secret fields painted over;
    /// None when the page has none and `decode` is false (Chromium's PNG is fine then).
    fn masked_capture(
        &mut self,
        params: Value,
        css_width: f64,
        whole: bool,
        decode: bool,
    ) -> Result<(String, Option<frames::Rgb>), WorkerError> {
        let mut boxes = self.secret_boxes(whole)?;
        let shot = self.page_call("Page.captureScreenshot", params)?;
        boxes.extend(self.secret_boxes(whole)?);
        let data = shot["data"].as_str().unwrap_or_default().to_string();
        if boxes.is_empty() && !decode {
            return Ok((data, None));
        }
        let png = STANDARD
            .decode(&data)
            .map_err(|e| WorkerError::Page(format!("the browser sent an unreadable screenshot: {e}")))?;
        let mut img = frames::decode_png(&png).map_err(|e| WorkerError::Page(e.to_string()))?;
        let k = if css_width > 0.0 { img.width as f64 / css_width } else { 1.0 };
        let scaled: Vec<Rect> = boxes.iter().map(|b| b.scaled(k)).collect();
        frames::mask(&mut img, &scaled);
        Ok((data, Some(img)))
    }

    /// A screenshot for the model or a person: Chromium's PNG, or (secret fields on the page)
    /// the same picture painted over and encoded again.
    pub(super) fn masked_screenshot(
        &mut self,
        params: Value,
        css_width: f64,
        whole: bool,
    ) -> Result<String, WorkerError> {
        match self.masked_capture(params, css_width, whole, false)? {
            (data, None) => Ok(data),
            (_, Some(img)) => {
                let png = crate::desktop::capture::encode_png(&img)?;
                Ok(STANDARD.encode(png))
            }
        }
    }

    /// The page as a recording frame: the viewport shrunk to `frames::FRAME_WIDTH` by the
    /// browser, masked, the last click marked, the caption below, as a one-frame GIF.
    pub(super) fn recording_frame(&mut self, p: &Value) -> Result<Value, WorkerError> {
        let metrics = self.page_call("Page.getLayoutMetrics", json!({}))?;
        let vp = &metrics["cssVisualViewport"];
        let (w, h) = (vp["clientWidth"].as_f64().unwrap_or(1280.0), vp["clientHeight"].as_f64().unwrap_or(720.0));
        let (x, y) = (vp["pageX"].as_f64().unwrap_or(0.0), vp["pageY"].as_f64().unwrap_or(0.0));
        let k = (frames::FRAME_WIDTH as f64 / w.max(1.0)).min(1.0);
        let clip = json!({"x": x, "y": y, "width": w, "height": h, "scale": k});
        let params = json!({"format": "png", "clip": clip, "optimizeForSpeed": true});
        let (_, img) = self.masked_capture(params, w, false, true)?;
        let mut img = img.ok_or_else(|| WorkerError::Page("no frame was made".into()))?;
        if let Some((cx, cy)) = self.last_click.take() {
            let k = img.width as f64 / w.max(1.0);
            frames::mark(&mut img, cx * k, cy * k);
        }
        let img = frames::caption(&img, p["caption"].as_str().unwrap_or(""));
        let gif = frames::gif_frame(&img).map_err(WorkerError::Page)?;
        Ok(json!({"frame_gif_base64": STANDARD.encode(&gif), "width": img.width, "height": img.height}))
    }
}

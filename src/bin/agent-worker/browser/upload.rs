//! `browser_upload_file`: one of the session's files (an input a person handed over, or one
//! the session downloaded) put into a file field of the page.
//!
//! The file is named, never given as a path: a name with a `/`, a `\`, a leading dot or a
//! control character is refused before anything is asked. The worker fetches the file from
//! the controller (`GET /files/NAME`, which serves only the files of the session this worker
//! serves) into the session's own private folder, under its own name (the name the site
//! sees), then sets it: on the field itself (a `<input type=file>`, a label's field, or the one
//! field inside the element) with `DOM.setFileInputFiles`, or, for a button that opens the
//! page's file chooser from script, by clicking it with the chooser intercepted and answering
//! it. The folder goes when the next session begins and when the worker stops.

use super::Browser;
use super::util::js;
use crate::backend::{Context, required_str};
use crate::error::WorkerError;
use crate::signals;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The most a page is given in one file (the controller's own limits are usually lower).
const MAX_BYTES: u64 = 4 << 30;
/// How long a click may take to open the page's file chooser.
const CHOOSER_WAIT: Duration = Duration::from_secs(5);
/// The name the session's folder is registered under while it exists.
const FOLDER: &str = "upload-files";

/// The file field an element stands for: itself, its label's field, or the only one inside.
fn field_of(selector: &str) -> String {
    format!(
        "(() => {{ const el = __ac.find({}); \
         const isFile = (e) => e instanceof HTMLInputElement && e.type === 'file'; \
         if (isFile(el)) return el; \
         if (el instanceof HTMLLabelElement && isFile(el.control)) return el.control; \
         const inside = el.querySelectorAll('input[type=file]'); \
         return inside.length === 1 ? inside[0] : null; }})()",
        js(selector)
    )
}

/// A session file's name as the model gives it: one plain name, never a path.
pub(super) fn check_name(name: &str) -> Result<(), WorkerError> {
    let path_like = name.contains(['/', '\\']) || name.starts_with('.') || name.chars().any(char::is_control);
    if name.trim().is_empty() || name.len() > 255 || path_like {
        return Err(WorkerError::bad(format!(
            "`filename` names one of this session's files (an input or a download), not a path: {:?} is refused",
            name.chars().take(120).collect::<String>()
        )));
    }
    Ok(())
}

impl Browser {
    pub(super) fn upload_file(&mut self, p: &Value, ctx: &Context) -> Result<Value, WorkerError> {
        let selector = required_str(p, "selector")?;
        let filename = required_str(p, "filename")?;
        check_name(filename)?;
        // The element first: a wrong selector costs no transfer.
        let field = self.eval_element(&field_of(selector))?;
        let path = self.fetch_for_page(filename, ctx)?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = self.before_action(p);
        let files = json!([path.to_string_lossy()]);
        match field {
            Some(object) => {
                self.page_call("DOM.setFileInputFiles", json!({"files": files, "objectId": object}))?;
            }
            None => self.answer_chooser(selector, files, p)?,
        }
        let done = json!({"uploaded": filename, "bytes": bytes, "into": selector});
        self.with_changes(done, before, p, &[])
    }

    /// Click `selector` with the page's file chooser intercepted, and answer the chooser it
    /// opens with `files`; interception ends whatever happened.
    fn answer_chooser(&mut self, selector: &str, files: Value, p: &Value) -> Result<(), WorkerError> {
        self.r()?.cdp.file_chooser = None;
        self.page_call("Page.setInterceptFileChooserDialog", json!({"enabled": true}))?;
        let answered = self.click(selector, p).and_then(|_| {
            let deadline = Instant::now() + CHOOSER_WAIT;
            loop {
                if let Some(chooser) = self.r()?.cdp.file_chooser.take() {
                    let node = chooser["backendNodeId"].clone();
                    return self.page_call("DOM.setFileInputFiles", json!({"files": files, "backendNodeId": node}));
                }
                if Instant::now() >= deadline {
                    return Err(WorkerError::bad(format!(
                        "{selector} is no file field, and clicking it opened no file chooser: give the file field's ref"
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
                // Any call reads the events that came meanwhile.
                self.page_call("Runtime.evaluate", json!({"expression": "1"}))?;
            }
        });
        let off = self.page_call("Page.setInterceptFileChooserDialog", json!({"enabled": false}));
        answered.and(off).map(|_| ())
    }

    /// The session's file, fetched from the controller into the session's folder under its
    /// own name (a fresh copy each time: the controller's is the one that counts).
    fn fetch_for_page(&mut self, filename: &str, ctx: &Context) -> Result<PathBuf, WorkerError> {
        let dir = self.upload_dir(ctx.session_id)?;
        let dest = dir.join(filename);
        let part = dir.join(format!(".{filename}.part"));
        let _ = std::fs::remove_file(&part);
        match ctx.uploader.fetch(filename, &part, MAX_BYTES) {
            Ok(_) => std::fs::rename(&part, &dest).map_err(|e| WorkerError::io("cannot keep the file to upload", e))?,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(e);
            }
        }
        Ok(dest)
    }

    /// The private folder of this session's files to upload, made once per session; the
    /// previous session's is removed.
    fn upload_dir(&mut self, session_id: &str) -> Result<PathBuf, WorkerError> {
        if let Some((owner, dir)) = &self.upload_files {
            if owner == session_id {
                return Ok(dir.clone());
            }
        }
        self.forget_upload_files();
        let dir = agent_controller::util::private_temp_dir(&format!("agent-worker-upload-{}-", std::process::id()))
            .map_err(|e| WorkerError::io("cannot make a folder for the file to upload", e))?;
        signals::own_dir(FOLDER, dir.clone());
        self.upload_files = Some((session_id.to_string(), dir.clone()));
        Ok(dir)
    }

    /// Remove the folder of files fetched for a page (a new session, the worker stopping).
    pub(super) fn forget_upload_files(&mut self) {
        if let Some((_, dir)) = self.upload_files.take() {
            let _ = std::fs::remove_dir_all(dir);
            signals::disown_dir(FOLDER);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_refused_and_a_name_is_not() {
        for bad in ["../x", "/etc/passwd", "a/b", "..", ".env", "a\\b", "a\nb", "", " "] {
            let e = check_name(bad).map_or_else(|e| e.to_string(), |()| String::new());
            assert!(e.contains("not a path"), "{bad:?}: {e}");
        }
        for good in ["invoice.pdf", "a b.txt", "report (2).csv", "données.bin"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
    }
}

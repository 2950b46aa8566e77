//! A session's stored files: the manifest of `files/`, `inputs/` and `screenshots/` (the kinds
//! of `files/` kept in `files.json`), where a file lives, and names that never overwrite. A path is handed out only
//! for a plain file in a plain folder of the session (never through a symbolic link).

use super::{FILES_JSON, SessionDir, real_dir};
use crate::protocol::FileKind;
use crate::util::filename::split_ext;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

impl SessionDir {
    /// The file manifest: what is in `files/` and `screenshots/`, with kinds and sizes.
    pub fn scan_files(&self) -> io::Result<FileIndex> {
        let kinds: BTreeMap<String, FileKind> = match fs::read(self.path(FILES_JSON)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        let mut index = FileIndex::default();
        for (dir, default_kind) in [
            (self.files_dir(), FileKind::Download),
            (self.screenshots_dir(), FileKind::Screenshot),
            (self.inputs_dir(), FileKind::Input),
        ] {
            if !real_dir(&dir) {
                continue;
            }
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
                let meta = entry.metadata()?;
                if !meta.is_file() || name.starts_with('.') {
                    continue;
                }
                let kind = match default_kind {
                    FileKind::Download => kinds.get(&name).copied().unwrap_or(FileKind::Download),
                    other => other,
                };
                index.insert(name, kind, meta.len());
            }
        }
        // The recording's frames are no files to list, but they take room all the same.
        index.total_bytes += self.recording_bytes();
        Ok(index)
    }

    /// The inputs folder, made (0700) if it is not there; never a symbolic link.
    pub fn make_inputs_dir(&self) -> io::Result<()> {
        let dir = self.inputs_dir();
        match super::private_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && real_dir(&dir) => Ok(()),
            other => other,
        }
    }

    pub fn save_file_kinds(&self, index: &FileIndex) -> io::Result<()> {
        let kinds: BTreeMap<&str, FileKind> = index
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.kind, FileKind::Download | FileKind::Generated))
            .map(|(n, e)| (n.as_str(), e.kind))
            .collect();
        self.write_json(FILES_JSON, &kinds)
    }

    /// Absolute path of a stored file, resolved strictly inside this session's folders.
    pub fn file_path(&self, index: &FileIndex, name: &str) -> Option<PathBuf> {
        let entry = index.entries.get(name)?;
        let path = self.path_for(entry.kind, name);
        let parent_real = path.parent().is_some_and(real_dir);
        let file_real = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        (parent_real && file_real).then_some(path)
    }

    /// Where a file of this kind and (already sanitized) name lives.
    pub fn path_for(&self, kind: FileKind, name: &str) -> PathBuf {
        let dir = match kind {
            FileKind::Screenshot => self.screenshots_dir(),
            FileKind::Input => self.inputs_dir(),
            FileKind::Download | FileKind::Generated => self.files_dir(),
        };
        dir.join(name)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct FileInfo {
    pub kind: FileKind,
    pub size: u64,
}

/// In-memory view of a session's stored files (`total_bytes` counts the recording's frames too).
#[derive(Debug, Default, Clone)]
pub struct FileIndex {
    pub entries: BTreeMap<String, FileInfo>,
    pub total_bytes: u64,
}

impl FileIndex {
    pub fn insert(&mut self, name: String, kind: FileKind, size: u64) {
        self.total_bytes += size;
        if let Some(old) = self.entries.insert(name, FileInfo { kind, size }) {
            self.total_bytes -= old.size;
        }
    }

    /// Files that count against `max_files_per_session` (screenshots do not).
    pub fn file_count(&self) -> usize {
        self.entries.values().filter(|e| e.kind != FileKind::Screenshot).count()
    }

    /// `name`, or `name-2`, `name-3`… before the extension, whichever is free.
    pub fn unique_name(&self, name: &str) -> String {
        if !self.entries.contains_key(name) {
            return name.to_string();
        }
        let (stem, ext) = split_ext(name);
        (2..)
            .map(|n| format!("{stem}-{n}{ext}"))
            .find(|candidate| !self.entries.contains_key(candidate))
            .unwrap_or_else(|| name.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names() {
        let mut idx = FileIndex::default();
        idx.insert("a.pdf".into(), FileKind::Download, 1);
        idx.insert("a-2.pdf".into(), FileKind::Download, 1);
        assert_eq!(idx.unique_name("a.pdf"), "a-3.pdf");
        assert_eq!(idx.unique_name("b"), "b");
        idx.insert("b".into(), FileKind::Download, 1);
        assert_eq!(idx.unique_name("b"), "b-2");
    }
}

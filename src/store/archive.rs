//! The session's files as one zip, streamed: each file through a fixed buffer, incompressible
//! content stored, the rest deflated fast (`sniff.rs`).

use super::sniff;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

/// Write a zip of `files` (name in archive, path on disk) to `out`, streaming: each file is
/// copied through a fixed buffer, never held whole in memory; incompressible content is
/// stored, the rest deflated fast (`store/sniff.rs`).
pub fn write_zip(files: &[(String, PathBuf)], out: impl Write) -> zip::result::ZipResult<()> {
    use zip::CompressionMethod;
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new_stream(out);
    for (name, path) in files {
        let mut src = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // removed meanwhile
            Err(e) => return Err(e.into()),
        };
        let size = src.metadata()?.len();
        let (method, level) = if sniff::compressible(&mut src)? {
            (CompressionMethod::Deflated, Some(sniff::FAST_LEVEL))
        } else {
            (CompressionMethod::Stored, None)
        };
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .compression_level(level)
            .large_file(size >= u32::MAX as u64)
            .unix_permissions(0o644);
        zip.start_file(name.as_str(), options)?;
        copy_big(&mut src, &mut zip)?;
    }
    zip.finish()?;
    Ok(())
}

/// `io::copy` through 256 KiB instead of 8 KiB: fewer, larger writes into the zip and the pipe.
fn copy_big(src: &mut File, out: &mut impl Write) -> io::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match src.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => out.write_all(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

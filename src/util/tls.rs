//! The clients' side of TLS (console, MCP server, worker): an `https://` daemon is verified
//! against the bundled web roots, or, with `--ca-file`, against that private CA alone.

use std::fmt;
use std::path::{Path, PathBuf};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// Why `--ca-file` cannot be used; each message names the file.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaFileError {
    /// The file could not be read.
    Read(PathBuf, std::io::Error),
    /// Its text is not PEM.
    NotPem(PathBuf, Box<ureq::Error>),
    /// It is PEM but holds no certificate.
    Empty(PathBuf),
}

impl fmt::Display for CaFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaFileError::Read(path, e) => write!(f, "cannot read the CA file {}: {e}", path.display()),
            CaFileError::NotPem(path, e) => write!(f, "the CA file {} is not PEM: {e}", path.display()),
            CaFileError::Empty(path) => write!(f, "the CA file {} holds no certificate", path.display()),
        }
    }
}

impl std::error::Error for CaFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CaFileError::Read(_, e) => Some(e),
            CaFileError::NotPem(_, e) => Some(e.as_ref()),
            CaFileError::Empty(_) => None,
        }
    }
}

/// The TLS settings for a client: web roots, or only the CA certificates in `ca_file` (PEM).
pub fn client_tls(ca_file: Option<&Path>) -> Result<TlsConfig, CaFileError> {
    let Some(path) = ca_file else { return Ok(TlsConfig::default()) };
    let pem = std::fs::read(path).map_err(|e| CaFileError::Read(path.to_path_buf(), e))?;
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(Ok(c)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<Result<_, _>>()
        .map_err(|e| CaFileError::NotPem(path.to_path_buf(), Box::new(e)))?;
    if certs.is_empty() {
        return Err(CaFileError::Empty(path.to_path_buf()));
    }
    Ok(TlsConfig::builder().root_certs(RootCerts::new_with_certs(&certs)).build())
}

/// A plain explanation when `e` is the server's certificate failing verification.
/// (rustls's error comes either as itself or inside the I/O error of the first write.)
pub fn untrusted(e: &ureq::Error) -> Option<String> {
    let tls = match e {
        ureq::Error::Rustls(tls) => Some(tls),
        ureq::Error::Io(io) => io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    match tls? {
        rustls::Error::InvalidCertificate(why) => Some(format!(
            "the controller's TLS certificate is not trusted ({why}); if a private CA signed it, \
             pass --ca-file with that CA's certificate (or the certificate itself if self-signed)"
        )),
        _ => None,
    }
}

//! The clients' side of TLS (console, MCP server, worker): an `https://` daemon is verified
//! against the bundled web roots, or, with `--ca-file`, against that private CA alone.

use std::path::Path;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// The TLS settings for a client: web roots, or only the CA certificates in `ca_file` (PEM).
pub fn client_tls(ca_file: Option<&Path>) -> Result<TlsConfig, String> {
    let Some(path) = ca_file else { return Ok(TlsConfig::default()) };
    let pem = std::fs::read(path).map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?;
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(Ok(c)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the CA file {} is not PEM: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("the CA file {} holds no certificate", path.display()));
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

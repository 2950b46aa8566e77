//! One-time codes from a stored TOTP secret (RFC 6238): `credentials.totp` is a base32 secret
//! (spaces and case as authenticator apps show it) or an `otpauth://totp/…?secret=…` URI with
//! its `digits` (6–8), `period` and `algorithm` (SHA1, SHA256, SHA512); SHA-1, 6 digits and
//! 30 s by default. The HMAC is ring's (already in the tree for TLS).
//!
//! Guarantees: the key lives in memory only, wiped on drop, and has no `Debug` that shows it;
//! a secret that does not decode, or names another kind of code (`hotp`), is refused when the
//! session is created, naming what is wrong, never later in the middle of a login.

use data_encoding::BASE32_NOPAD;
use ring::hmac;

/// Why a TOTP secret was refused (never quoting the secret).
#[derive(Debug, thiserror::Error)]
pub enum TotpError {
    #[error("the TOTP secret is not base32 ({0})")]
    NotBase32(#[source] data_encoding::DecodeError),
    #[error("the TOTP secret is shorter than 80 bits")]
    Short,
    #[error("the TOTP URI does not parse ({0})")]
    Uri(#[source] url::ParseError),
    #[error("the otpauth URI is not a TOTP (`otpauth://totp/…`)")]
    NotTotp,
    #[error("the otpauth URI has no `secret`")]
    NoSecret,
    #[error("`digits` must be 6, 7 or 8")]
    Digits,
    #[error("`period` must be 1 to 300 seconds")]
    Period,
    #[error("unknown TOTP algorithm {0:?}; expected SHA1, SHA256 or SHA512")]
    Algorithm(String),
}

/// A TOTP generator.
pub struct Totp {
    key: Vec<u8>,
    digits: u32,
    period: u64,
    algorithm: hmac::Algorithm,
}

impl std::fmt::Debug for Totp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Totp({} digits, {} s)", self.digits, self.period)
    }
}

impl Drop for Totp {
    fn drop(&mut self) {
        self.key.iter_mut().for_each(|b| *b = 0);
    }
}

impl Totp {
    /// A base32 secret or an `otpauth://totp/` URI.
    pub fn parse(text: &str) -> Result<Totp, TotpError> {
        let text = text.trim();
        if text.to_ascii_lowercase().starts_with("otpauth://") {
            return from_uri(text);
        }
        Ok(Totp { key: base32(text)?, digits: 6, period: 30, algorithm: hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY })
    }

    /// The code for the period holding `unix_seconds`.
    pub fn code_at(&self, unix_seconds: u64) -> String {
        let counter = unix_seconds / self.period;
        let key = hmac::Key::new(self.algorithm, &self.key);
        let mac = hmac::sign(&key, &counter.to_be_bytes());
        let mac = mac.as_ref();
        // RFC 4226's dynamic truncation: 31 bits from the offset the last nibble names.
        let at = usize::from(mac[mac.len() - 1] & 0x0f);
        let word = u32::from_be_bytes([mac[at] & 0x7f, mac[at + 1], mac[at + 2], mac[at + 3]]);
        format!("{:0width$}", word % 10u32.pow(self.digits), width = self.digits as usize)
    }

    /// The code now, and the next period's (the one to try when the site refused this one).
    pub fn codes_now(&self) -> [String; 2] {
        let now = crate::util::clock::now().unix_timestamp().max(0) as u64;
        [self.code_at(now), self.code_at(now + self.period)]
    }
}

fn base32(text: &str) -> Result<Vec<u8>, TotpError> {
    let clean: String = text.chars().filter(|c| !c.is_whitespace() && *c != '-' && *c != '=').collect();
    let key = BASE32_NOPAD.decode(clean.to_ascii_uppercase().as_bytes()).map_err(TotpError::NotBase32)?;
    if key.len() < 10 {
        return Err(TotpError::Short);
    }
    Ok(key)
}

fn from_uri(text: &str) -> Result<Totp, TotpError> {
    let url = url::Url::parse(text).map_err(TotpError::Uri)?;
    if url.host_str() != Some("totp") {
        return Err(TotpError::NotTotp);
    }
    let param = |name: &str| url.query_pairs().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_string());
    let key = base32(&param("secret").ok_or(TotpError::NoSecret)?)?;
    let digits = match param("digits").as_deref() {
        None => 6,
        Some(d) => d.parse().ok().filter(|d| (6..=8).contains(d)).ok_or(TotpError::Digits)?,
    };
    let period = match param("period").as_deref() {
        None => 30,
        Some(p) => p.parse().ok().filter(|p| (1..=300).contains(p)).ok_or(TotpError::Period)?,
    };
    let algorithm = match param("algorithm").map(|a| a.to_ascii_uppercase()).as_deref() {
        None | Some("SHA1") => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
        Some("SHA256") => hmac::HMAC_SHA256,
        Some("SHA512") => hmac::HMAC_SHA512,
        Some(other) => return Err(TotpError::Algorithm(other.to_string())),
    };
    Ok(Totp { key, digits, period, algorithm })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's appendix B: its seeds, 8 digits, at its times.
    #[test]
    fn the_rfc_6238_test_vectors() {
        let seed20 = BASE32_NOPAD.encode(b"12345678901234567890");
        let seed32 = BASE32_NOPAD.encode(b"12345678901234567890123456789012");
        let seed64 = BASE32_NOPAD.encode(b"1234567890123456789012345678901234567890123456789012345678901234");
        let uri = |seed: &str, alg: &str| format!("otpauth://totp/x?secret={seed}&digits=8&algorithm={alg}");
        let (sha1, sha256, sha512) = (
            Totp::parse(&uri(&seed20, "SHA1")).unwrap(),
            Totp::parse(&uri(&seed32, "SHA256")).unwrap(),
            Totp::parse(&uri(&seed64, "SHA512")).unwrap(),
        );
        for (t, one, two, three) in [
            (59, "94287082", "46119246", "90693936"),
            (1_111_111_109, "07081804", "68084774", "25091201"),
            (20_000_000_000, "65353130", "77737706", "47863826"),
        ] {
            assert_eq!((sha1.code_at(t), sha256.code_at(t), sha512.code_at(t)), (one.into(), two.into(), three.into()));
        }
    }

    #[test]
    fn a_plain_secret_is_six_digits_every_30_s_and_bad_ones_are_refused_by_name() {
        let t = Totp::parse("gezd gnbv gy3t qojq gezd gnbv gy3t qojq").unwrap();
        assert_eq!(t.code_at(59), "287082", "the RFC's SHA-1 code, 6 digits");
        assert_eq!(t.code_at(30), t.code_at(59), "one period");
        assert!(Totp::parse("not base32!").unwrap_err().to_string().contains("base32"));
        assert!(Totp::parse("GEZDGNBV").unwrap_err().to_string().contains("80 bits"));
        assert!(Totp::parse("otpauth://hotp/x?secret=GEZDGNBVGY3TQOJQ").unwrap_err().to_string().contains("TOTP"));
        assert!(
            Totp::parse("otpauth://totp/x?secret=GEZDGNBVGY3TQOJQ&digits=4")
                .unwrap_err()
                .to_string()
                .contains("digits")
        );
        assert!(!format!("{t:?}").contains("GEZD"), "no key in Debug");
    }
}
